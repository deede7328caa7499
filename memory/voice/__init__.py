"""Discord-free voice processing: per-speaker utterance segmentation and audio file decoding."""
