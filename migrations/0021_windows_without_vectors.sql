-- Windows keep their lines, speakers and mentions but no longer need a vector: recall's vector half reads
-- line_vectors, and a window's embedding is read only for a campaign chunked before lines had vectors.
ALTER TABLE chunks ALTER COLUMN embedding DROP NOT NULL;
