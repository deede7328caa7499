"""The salience gate: turns with nothing to extract (greetings, table talk, dice results) skip extraction.

Cheap and conservative: a turn is trivial only when every word is filler, a number or dice talk, or when it is
very short and names nothing (no capitalised word beyond the ordinary ones). The pipeline also keeps any turn
that mentions a known entity, whatever this says.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
_LAUGH = re.compile(
    r"^(?:(?:a?ha)+h?|(?:he)+h?|(?:hi){2,}|lo+l+|l+m+f*a+o+|ro+fl+|x+d+|kek|heh|pff+t?|ugh+|hm+|u+m+|u+h+|o+h+|a+h+|w+o+w+)$"
)
_DICE = re.compile(r"^(?:\d+|\d*d\d+|\d+(?:st|nd|rd|th)|nat\d+|[+-]?\d+)$")

#: Table talk: words that carry no campaign content on their own.
_FILLER = frozenset(
    """
    ok okay k kk alright alrighty right sure yes yeah yep yup ya yah no nope nah maybe fine cool nice great good
    awesome sweet wow whoa oops damn dang geez jeez gosh omg wtf lol lmao haha hi hello hey heya hiya yo howdy bye
    goodbye goodnight night morning evening afternoon thanks thank thx ty you sorry welcome please brb gtg gg afk
    all everyone everybody guys folks team y'all yall friends see ya later again back um uh er erm hmm huh what eh
    oh ah so well just really totally true exactly agreed same me too mine ours wait hold on one sec second moment
    let's lets go okay's it's that's thats this that is was a an the and or but i we my our to for of it oh nice
    one yes yeah love amazing incredible ooh ouch rip lucky unlucky next week time tonight soon
    """.split()
)
#: Dice talk: numbers and the words said around them ("I rolled a nat 20", "that's 17 to hit").
_DICE_WORDS = frozenset(
    """
    roll rolls rolled rolling reroll dice die d nat natural crit crits critical fail failure success succeed
    plus minus total damage hit hits miss misses to initiative advantage disadvantage modifier mod save saving
    throw check dc ac got get gets with on a an i is that's thats it's for my me number points hp heal healing
    one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen
    eighteen nineteen twenty thirty forty fifty hundred
    """.split()
)
#: Capitalised words that name nothing: sentence starts, pronouns, interjections.
COMMON_WORDS = (
    _FILLER
    | _DICE_WORDS
    | frozenset(
        """
    he she they them his her their you your yours we us who where why how when which there here can could would
    should will do does did don't can't won't not if then now yes no look come let give take attack run cast i'm
    i'll i've it'd okay
    """.split()
    )
)
#: A turn this short that names nothing is table talk ("go left", "me next").
MAX_SHORT_WORDS = 3


def is_trivial(text: str) -> bool:
    """True if the turn has nothing for the knowledge graph."""
    words = _WORD.findall(text)
    if not words:
        return True  # punctuation, emoji, "..."
    lowered = [w.casefold() for w in words]
    if all(w in _FILLER or w in _DICE_WORDS or _LAUGH.match(w) or _DICE.match(w) for w in lowered):
        return True
    if len(words) > MAX_SHORT_WORDS:
        return False
    return not any(_names_something(w, low) for w, low in zip(words, lowered, strict=True))


def _names_something(word: str, lowered: str) -> bool:
    return word[0].isupper() and lowered not in COMMON_WORDS and not _LAUGH.match(lowered)
