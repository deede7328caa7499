"""The bot and the worker take what start-up loaded out of the collector's way (``lorekeeper correct`` does too)."""

from __future__ import annotations

import gc

import bot.app
from bot.cli.common import freeze_start_up
from memory.correction.pronounce import _cmudict


def test_start_up_is_frozen_and_the_correction_tables_loaded() -> None:
    _cmudict.cache_clear()  # another test may have loaded it already
    try:
        freeze_start_up(tables=True)
        assert _cmudict.cache_info().currsize == 1  # loaded by start-up, not by the first utterance
        # a full collection walks generations 0–2 only: what start-up made is in none of them now
        assert not any(o is vars(bot.app) or o is bot.app.LorekeeperBot for o in gc.get_objects())
    finally:
        gc.unfreeze()
