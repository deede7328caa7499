"""The DAVE step of the voice-recv adapter and the RTP clock, with stand-ins for the voice connection.

No Discord voice server can run here (see docs/voice-checklist.md); the objects below stand in for
voice-recv's transport decryptor and for discord.py's DAVE session, and only where those are needed.
"""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest
from nacl.exceptions import CryptoError

from bot.voice import OPUS_SILENCE, DaveDecryptor, RtpClock
from memory.voice.capture import FrameDecryptor


class Transport:
    def decrypt_rtp(self, packet: SimpleNamespace) -> bytes:
        return packet.data


class Dave:
    ready = True

    def decrypt(self, user_id: int, media_type: object, payload: bytes) -> bytes:
        if not payload.startswith(b"E2E"):
            raise RuntimeError("no key for this generation")
        return payload[3:]


def client(session: Dave | None) -> SimpleNamespace:
    return SimpleNamespace(_connection=SimpleNamespace(dave_session=session), _get_id_from_ssrc={7: 42}.get)


def decryptor(session: Dave | None) -> DaveDecryptor:
    vc = client(session)
    gate = FrameDecryptor(lambda uid, payload: session.decrypt(uid, None, payload), log_every=1)  # type: ignore[union-attr]
    return DaveDecryptor(Transport(), vc, gate)  # type: ignore[arg-type]


def test_dave_layer_is_removed_after_transport_decryption() -> None:
    d = decryptor(Dave())
    assert d.decrypt_rtp(SimpleNamespace(ssrc=7, data=b"E2Eopus")) == b"opus"
    assert d.decrypt_rtp(SimpleNamespace(ssrc=7, data=OPUS_SILENCE)) == OPUS_SILENCE  # silence is never E2EE


def test_without_a_ready_dave_session_the_payload_passes_through() -> None:
    assert decryptor(None).decrypt_rtp(SimpleNamespace(ssrc=7, data=b"opus")) == b"opus"


def test_a_packet_that_fails_is_dropped_counted_and_logged_by_us_only(caplog: pytest.LogCaptureFixture) -> None:
    d = decryptor(Dave())
    reader_log = logging.getLogger("discord.ext.voice_recv.reader")
    with caplog.at_level(logging.WARNING):
        for packet in (SimpleNamespace(ssrc=7, data=b"garbled"), SimpleNamespace(ssrc=99, data=b"E2Eopus")):
            with pytest.raises(CryptoError):  # voice-recv's reader drops a packet on CryptoError
                d.decrypt_rtp(packet)
            reader_log.error("CryptoError decoding packet data")  # what the reader logs next; filtered
    assert d.gate.failed == 1  # the unknown SSRC (no SPEAKING event yet) is dropped before DAVE
    assert "failed to decrypt" in caplog.text
    assert "CryptoError decoding packet data" not in caplog.text


def test_rtp_clock_spaces_frames_exactly_and_reanchors_after_a_jump() -> None:
    now = [100.0]
    clock = RtpClock(lambda: now[0])
    start = 2**32 - 960  # the 32-bit RTP timestamp wraps after the next frame
    assert clock.at(1, start) == 100.0
    now[0] = 100.5  # a burst from the jitter buffer arrives late: RTP spacing wins
    assert clock.at(1, 0) == pytest.approx(100.02)
    assert clock.at(1, 48_000 * 2 // 5 - 960) == pytest.approx(100.4)
    now[0] = 200.0  # a new stream after a reconnect
    assert clock.at(1, 5) == 200.0
