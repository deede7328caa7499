"""``lorekeeper correct`` driven through click's runner (the command object itself)."""

from __future__ import annotations

import io
import json
import os
import select
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner

from bot.cli.correct import correct, run

ROOT = Path(__file__).resolve().parents[2]


def _lines(output: str) -> list[dict]:
    return [json.loads(line) for line in output.splitlines()]


def test_plain_list_and_json_lines(tmp_path: Path) -> None:
    names = tmp_path / "names.txt"
    names.write_text("# the party\nVasselheim\nFrumpkin\n\n")
    stdin = (
        "\n".join(
            [
                "we rode to vassal high mm today",
                json.dumps(
                    {
                        "text": "from skin, come here",
                        "words": [
                            {"word": "from", "confidence": 0.3},
                            {"word": "skin,", "confidence": 0.4},
                            {"word": "come", "confidence": 0.9},
                            {"word": "here", "confidence": 0.9},
                        ],
                    }
                ),
                '{"text": not json',
                json.dumps({"text": "the elder nacks is here", "entities": ["Eldrinax"]}),
                json.dumps({"text": "hi", "words": [{"word": "hi", "confidence": 7}]}),
            ]
        )
        + "\n"
    )
    result = CliRunner().invoke(correct, ["--entities", str(names)], input=stdin)
    assert result.exit_code == 0, result.output
    first, second, bad, biased, bad_conf = _lines(result.output)
    assert first["text"] == "we rode to Vasselheim today"
    assert first["raw_text"] == "we rode to vassal high mm today"
    assert first["corrections"][0] | {"score": None} == {
        "span": "vassal high mm",
        "replacement": "Vasselheim",
        "start": 11,
        "end": 25,
        "entity_id": None,
        "score": None,
        "stage": 1,
    }
    assert second["text"] == "Frumpkin, come here"
    assert bad["line"] == 3 and "invalid JSON" in bad["error"]
    assert biased["text"] == "the Eldrinax is here"  # the line's own list, not the file's
    assert bad_conf["line"] == 5 and "confidence" in bad_conf["error"]


def test_a_line_written_decomposed_is_read_composed(tmp_path: Path) -> None:
    """A decomposed "ó" (o and ◌́) split "Mórwen" into "Mó" and "rwen", and "rwen" was corrected to the name:
    "MóMórwen's ring". The line is read NFC, as the store keeps lines."""
    import unicodedata

    names = tmp_path / "names.txt"
    names.write_text("Mórwen\n")
    said = unicodedata.normalize("NFD", "the name Mórwen's ring")
    stdin = said + "\n" + json.dumps({"text": said, "words": [{"word": w, "confidence": 0.9} for w in said.split()]})
    result = CliRunner().invoke(correct, ["--entities", str(names)], input=stdin + "\n")
    assert result.exit_code == 0, result.output
    for line in _lines(result.output):
        assert line["text"] == line["raw_text"] == "the name Mórwen's ring" and line["corrections"] == []


def test_invisible_characters_in_names_are_not_written_into_the_transcript(tmp_path: Path) -> None:
    """A name pasted from a web page may hold a zero-width space or a direction mark: invisible in the list, and
    in the corrected transcript, where it would split the word for search."""
    names = tmp_path / "names.txt"
    names.write_text("\ufeffEld\u200brinax\u200e\nIron\u00adhold\n")
    stdin = "we met elder nacks at iron hold\n" + json.dumps(
        {"text": "we met elder nacks", "entities": ["Eld\u200crinax", "\u2060"]}
    )
    result = CliRunner().invoke(correct, ["--entities", str(names), "--jobs", "1"], input=stdin)
    assert [line["text"] for line in _lines(result.output)] == ["we met Eldrinax at Ironhold", "we met Eldrinax"]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_thresholds_are_options(tmp_path: Path, jobs: str) -> None:
    """The least score a match by sound needs is the caller's to raise, on the sound path ("elder nacks" / Eldrinax
    scores 0.78: two phones off nine) as on the spelling one; per-line lists follow it too."""
    names = tmp_path / "names.txt"
    names.write_text("Eldrinax\nIronhold\n")
    stdin = "we met elder nacks at iron hold\n" + json.dumps(
        {"text": "we met elder nacks at iron hold", "entities": ["Eldrinax", "Ironhold"]}
    )
    default = CliRunner().invoke(correct, ["--entities", str(names), "--jobs", jobs], input=stdin)
    assert [line["text"] for line in _lines(default.output)] == ["we met Eldrinax at Ironhold"] * 2
    strict = CliRunner().invoke(
        correct, ["--entities", str(names), "--jobs", jobs, "--phonetic-threshold", "0.8"], input=stdin
    )
    assert strict.exit_code == 0, strict.output
    assert [line["text"] for line in _lines(strict.output)] == ["we met elder nacks at Ironhold"] * 2
    refused = CliRunner().invoke(correct, ["--entities", str(names), "--fuzzy-threshold", "1.5"], input=stdin)
    assert refused.exit_code == 2 and "1.5 is not in the range 0<=x<=1" in refused.output


def test_campaign_yaml(tmp_path: Path) -> None:
    campaign = tmp_path / "c.yaml"
    campaign.write_text(
        "campaign: {name: X}\nentities:\n  - name: Grog Strongjaw\n    aliases: [Grog]\n  - name: Westruun\n"
    )
    result = CliRunner().invoke(correct, ["--entities", str(campaign)], input="off to west rune we go\n")
    assert _lines(result.output)[0]["text"] == "off to Westruun we go"


def test_campaign_yaml_heard_as_phrases_are_corrected_too(tmp_path: Path) -> None:
    campaign = tmp_path / "c.yaml"
    campaign.write_text("entities:\n  - {name: Frumpkin, type: npc, heard_as: [from skin]}\n")
    result = CliRunner().invoke(correct, ["--entities", str(campaign)], input="and from skin jumps\n")
    assert _lines(result.output)[0]["text"] == "and Frumpkin jumps"
    campaign.write_text("entities:\n  - {name: Frumpkin, heard_as: from skin}\n")
    refused = CliRunner().invoke(correct, ["--entities", str(campaign)], input="x\n")
    assert refused.exit_code == 2 and "entity 'Frumpkin': heard_as must be a list of names" in refused.output


def test_campaign_yaml_people_are_called_by_their_last_name_alone(tmp_path: Path) -> None:
    campaign = tmp_path / "c.yaml"
    campaign.write_text("entities:\n  - {name: Edgar Whitlock, type: NPC}\n")
    result = CliRunner().invoke(correct, ["--entities", str(campaign)], input="Whit lock. Got it.\n")
    assert _lines(result.output)[0]["text"] == "Whitlock. Got it."
    campaign.write_text("entities:\n  - {name: Edgar Whitlock, type: location}\n")  # a place has no last name
    result = CliRunner().invoke(correct, ["--entities", str(campaign)], input="Whit lock. Got it.\n")
    assert _lines(result.output)[0]["text"] == "Whit lock. Got it."


def test_campaign_yaml_not_heard_as_phrases_are_left_as_said(tmp_path: Path) -> None:
    campaign = tmp_path / "c.yaml"
    line = "a bitter salt wind blows past bitter soult\n"
    campaign.write_text("entities:\n  - {name: Bittersolt, type: npc}\n")
    result = CliRunner().invoke(correct, ["--entities", str(campaign)], input=line)
    assert _lines(result.output)[0]["text"] == "a Bittersolt wind blows past Bittersolt"
    campaign.write_text("entities:\n  - {name: Bittersolt, type: npc, not_heard_as: [bitter salt]}\n")
    result = CliRunner().invoke(correct, ["--entities", str(campaign)], input=line)
    assert _lines(result.output)[0]["text"] == "a bitter salt wind blows past Bittersolt"


def test_bad_campaign_yaml_is_a_usage_error(tmp_path: Path) -> None:
    campaign = tmp_path / "c.yaml"
    campaign.write_text("entities:\n  - aliases: [x]\n")
    result = CliRunner().invoke(correct, ["--entities", str(campaign)], input="")
    assert result.exit_code == 2
    assert "entity 1 has no name" in result.output


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("c.yaml", "entities:\n  - {name: Eldrinax\n", "not valid YAML"),  # never read as a list of names
        ("c.yaml", "entitys:\n  - name: Eldrinax\n", "expected a campaign file"),
        ("c.yaml", "", "expected a campaign file"),
        ("c.yaml", "[" * 5000, "not valid YAML"),
        ("names.txt", "# only a comment\n\n", "no entity names in it"),
        ("names.txt", b"Eldr\xffinax\n", "not UTF-8 text"),
    ],
)
def test_an_entities_file_that_yields_no_names_is_a_usage_error(
    tmp_path: Path, name: str, content: str | bytes, expected: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    result = CliRunner().invoke(correct, ["--entities", str(path)], input="the elder nacks\n")
    assert result.exit_code == 2 and expected in result.output, result.output


@pytest.mark.parametrize("aliases", ["{}", "false", "''"])
def test_aliases_of_the_wrong_kind_are_a_usage_error_not_no_aliases(tmp_path: Path, aliases: str) -> None:
    """``aliases: {}`` was read as no aliases."""
    campaign = tmp_path / "c.yaml"
    campaign.write_text(f"entities:\n  - name: Grog Strongjaw\n    aliases: {aliases}\n  - name: Westruun\n")
    result = CliRunner().invoke(correct, ["--entities", str(campaign)], input="off to west rune we go\n")
    assert result.exit_code == 2
    assert "entity 'Grog Strongjaw': aliases must be a list of names" in result.output


def test_json_line_fields_of_the_wrong_kind_are_error_lines(tmp_path: Path) -> None:
    """A confidence of ``true`` is no 1.0 (a bool is an int in Python), and ``"words": {}`` no "no words"."""
    names = tmp_path / "names.txt"
    names.write_text("Westruun\n")
    lines = [
        {"words": [{"word": "west", "confidence": True}]},
        {"text": "west rune", "words": {}},
        {"text": "west rune", "words": False},
        {"text": "west rune", "words": [{"word": "west", "confidence": "0.9"}]},
        {"text": "west rune", "entities": {}},
        {"text": True},
        {"text": "off to west rune", "words": None, "entities": None},
    ]
    stdin = "".join(json.dumps(line) + "\n" for line in lines)
    result = CliRunner().invoke(correct, ["--entities", str(names), "--jobs", "1"], input=stdin)
    assert result.exit_code == 0, result.output
    *errors, fine = _lines(result.output)
    assert errors == [
        {"line": 1, "error": "confidence of 'west' must be a number from 0 to 1, or null"},
        {"line": 2, "error": '"words" must be a list of {"word", "confidence"}'},
        {"line": 3, "error": '"words" must be a list of {"word", "confidence"}'},
        {"line": 4, "error": "confidence of 'west' must be a number from 0 to 1, or null"},
        {"line": 5, "error": '"entities" must be a list of names'},
        {"line": 6, "error": '"text" must be a string (or give "words")'},
    ]
    assert fine["text"] == "off to Westruun"


def test_a_yaml_list_of_names(tmp_path: Path) -> None:
    path = tmp_path / "names.yml"
    path.write_text("- Eldrinax\n- Westruun\n")
    result = CliRunner().invoke(correct, ["--entities", str(path)], input="off to west rune we go\n")
    assert _lines(result.output)[0]["text"] == "off to Westruun we go"


def test_llm_without_a_configured_model_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LOREKEEPER_LLM_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "LOREKEEPER_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    result = CliRunner().invoke(correct, ["--llm"], input="hello there\n")
    assert result.exit_code == 2
    assert "--llm needs LOREKEEPER_LLM_MODEL" in result.output


def test_a_line_without_any_entities_is_an_error_line() -> None:
    result = CliRunner().invoke(correct, [], input="hello there\n")
    assert "no entities" in _lines(result.output)[0]["error"]


def test_thousands_of_lines_each_get_their_answer(tmp_path: Path) -> None:
    # how many lines a second: `python -m bench.correction --only speed` (README, Performance), not a timed test
    from memory.correction import EntityName

    entities = [EntityName(name=f"Name{i}x{chr(97 + i % 26)}oria") for i in range(300)]
    entities.append(EntityName(name="Vox Machina"))
    line = "we went to the vox machine a house with the dwarves of the mountain who said hello there friend\n"
    out = io.StringIO()
    run(io.StringIO(line * 2000), out, entities)
    assert out.getvalue().count('"text": "we went to the Vox Machina house') == 2000


def test_a_line_that_is_not_utf8_is_an_error_line(tmp_path: Path) -> None:
    names = tmp_path / "names.txt"
    names.write_text("Eldrinax\n")
    stdin = b"the elder nacks\n" + b"caf\xe9 au lait\n" + b"the elder nacks\n"
    result = CliRunner().invoke(correct, ["--entities", str(names)], input=stdin)
    first, bad, last = _lines(result.output)
    assert first["text"] == last["text"] == "the Eldrinax"
    assert bad == {"line": 2, "error": "not UTF-8 text (character 4)"}


def test_a_word_espeak_has_no_phones_for_does_not_stop_the_stream(tmp_path: Path) -> None:
    # eSpeak NG reads an Arabic-Indic digit as nothing at all; in a line or as a name, it used to end the run
    names = tmp_path / "names.txt"
    names.write_text("Eldrinax\n٣٣\n")
    stdin = "the ٣ elder nacks\n" + json.dumps({"text": "the elder nacks", "entities": ["Eldrinax", "٤"]}) + "\n"
    result = CliRunner().invoke(correct, ["--entities", str(names)], input=stdin)
    assert result.exit_code == 0, result.output
    assert [line["text"] for line in _lines(result.output)] == ["the ٣ Eldrinax", "the Eldrinax"]


def test_one_answer_per_input_line_in_order(tmp_path: Path) -> None:
    # a harness zips its input with the output: blank lines are answered too, a byte-order mark is no part of
    # the first line, CRLF ends a line and a stray CR inside one does not split it
    names = tmp_path / "names.txt"
    names.write_text("Eldrinax\nIronhold\n")
    stdin = b'\xef\xbb\xbf{"text": "the elder nacks"}\r\n\r\n   \n\tto iron hold\r\nthe elder\rnacks\n'
    result = CliRunner().invoke(correct, ["--entities", str(names)], input=stdin)
    assert result.exit_code == 0, result.output
    assert [line["raw_text"] for line in _lines(result.output)] == [
        "the elder nacks",
        "",
        "",
        "to iron hold",
        "the elder\rnacks",
    ]
    assert [line["text"] for line in _lines(result.output)][:4] == ["the Eldrinax", "", "", "to Ironhold"]


def _correct_process(names: Path, *options: str) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-c", "from bot.cli import main; main()", "correct", "--entities", str(names)]
    env = {k: v for k, v in os.environ.items() if k != "LOREKEEPER_CONFIG"}
    return subprocess.Popen(
        [*command, *options], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env=env
    )


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_each_answer_is_written_while_stdin_stays_open(tmp_path: Path, jobs: str) -> None:
    # a harness on a pipe writes a line and waits for its answer before it writes the next
    names = tmp_path / "names.txt"
    names.write_text("Eldrinax\n")
    with _correct_process(names, "--jobs", jobs) as process:
        assert process.stdin is not None and process.stdout is not None
        try:
            for heard in (b"we met elder nacks\n", b"then elder nacks left\n"):
                process.stdin.write(heard)
                process.stdin.flush()
                assert select.select([process.stdout], [], [], 60)[0], "no answer while stdin is open"
                assert b"Eldrinax" in process.stdout.readline()
        finally:
            process.stdin.close()
    assert process.returncode == 0


def test_worker_processes_answer_as_one_process_does(tmp_path: Path) -> None:
    names = tmp_path / "names.txt"
    names.write_text("Eldrinax\nIronhold\n")
    lists = [["Vasselheim"], ["Eldrinax", "Vasselheim"], []]
    lines = [
        b"to iron hold and the elder nacks\n",
        *(
            json.dumps({"text": "vassal high mm and the elder nacks", "entities": lists[i % 3]}).encode() + b"\n"
            for i in range(3)
        ),
        b'{"text": not json\n',
        b"caf\xe9 au lait\n",
        b"\n",
    ]
    stdin = b"".join(lines[i % len(lines)] for i in range(700))
    outputs = [subprocess.run(
        [sys.executable, "-c", "from bot.cli import main; main()", "correct", "--entities", str(names), "--jobs", jobs],
        input=stdin, capture_output=True, cwd=ROOT, timeout=300, check=True,
    ).stdout for jobs in ("1", "2")]  # fmt: skip
    assert outputs[1] == outputs[0]
    answers = _lines(outputs[0].decode())
    assert len(answers) == 700 and answers[698] == {"line": 699, "error": "not UTF-8 text (character 4)"}
    assert [a["text"] for a in answers[:4]] == [
        "to Ironhold and the Eldrinax",
        "Vasselheim and the elder nacks",
        "Vasselheim and the Eldrinax",
        "vassal high mm and the elder nacks",
    ]


def test_a_worker_that_dies_ends_the_run_with_an_error_not_a_wait(tmp_path: Path) -> None:
    names = tmp_path / "names.txt"
    names.write_text("Eldrinax\n")
    with _correct_process(names, "--jobs", "2") as process:
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        process.stdin.write(b"we met elder nacks\n")
        process.stdin.flush()
        assert b"Eldrinax" in process.stdout.readline()
        psutil.Process(process.pid).children()[0].kill()
        try:
            process.stdin.write(b"then elder nacks left\n" * 100)
            process.stdin.flush()
        except BrokenPipeError:
            pass  # it had already stopped
        assert process.wait(timeout=60) == 1
        assert b"a worker process died" in process.stderr.read()


@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux's")
def test_workers_go_with_a_parent_killed_outright(tmp_path: Path) -> None:
    names = tmp_path / "names.txt"
    names.write_text("Eldrinax\n")
    with _correct_process(names, "--jobs", "2") as process:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(b"we met elder nacks\n")
        process.stdin.flush()
        assert b"Eldrinax" in process.stdout.readline()
        workers = psutil.Process(process.pid).children()
        assert len(workers) == 2
        process.kill()
        _, alive = psutil.wait_procs(workers, timeout=30)
        assert not alive


def test_lines_a_harness_may_send_that_are_not_the_usual_json(tmp_path: Path) -> None:
    names = tmp_path / "names.txt"
    names.write_text("Ironhold\nVex'ahlia\n")
    split_word = [{"word": "the"}, {"word": "vex", "confidence": 0.4}, {"word": "ahlia", "confidence": None}]
    stdin = "\n".join(
        [
            "{sighs} to iron hold",  # speech that opens with a brace
            '  {"text": "to iron hold"}',
            '"to iron hold"',  # not an object: a line of text like any other
            '{"a": ' * 100_000,
            '{"text": "\\ud800 to iron hold"}',
            json.dumps({"text": "the vexahlia", "words": split_word}),  # null or no confidence: unknown
            "to iron hold",
        ]
    )
    result = CliRunner().invoke(correct, ["--entities", str(names)], input=stdin + "\n")
    assert result.exit_code == 0, result.output
    braces, spaced, quoted, deep, surrogate, unknown, last = _lines(result.output)
    assert braces["text"] == "{sighs} to Ironhold"
    assert spaced["text"] == "to Ironhold"
    assert quoted["text"] == '"to Ironhold"'
    assert deep == {"line": 4, "error": "invalid JSON: nested too deeply"}
    assert surrogate == {"line": 5, "error": "a \\u escape is half a surrogate pair (\\ud800)"}
    assert unknown["text"] == "the Vex'ahlia"
    assert last["text"] == "to Ironhold"


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("names.txt", "\ufeffEldrinax\n# a comment\n\nEldrinax\n  Ironhold  \n"),  # a byte-order mark, a duplicate
        ("names.json", '["Eldrinax", "Ironhold"]'),
        ("campaign.json", '{"entities": [{"name": "Eldrinax"}, {"name": "Ironhold"}]}'),
    ],
)
def test_entities_files_as_people_write_them(tmp_path: Path, name: str, content: str) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    result = CliRunner().invoke(correct, ["--entities", str(path)], input="the elder nacks of iron hold\n")
    assert result.exit_code == 0, result.output
    assert _lines(result.output)[0]["text"] == "the Eldrinax of Ironhold"


def test_per_line_lists_are_prepared_once_and_kept_within_a_bound_of_names(monkeypatch: pytest.MonkeyPatch) -> None:
    import bot.cli.correct as command
    from memory.correction import Pipeline

    built: list[list[str]] = []

    class Counted(Pipeline):
        def set_entities(self, entities: list, *, lazy: bool = False) -> None:
            built.append([e.name for e in entities])
            super().set_entities(entities, lazy=lazy)

    monkeypatch.setattr(command, "Pipeline", Counted)
    monkeypatch.setattr(command, "_CACHE_NAMES", 5)
    first, other = ["Eldrinax", "Ironhold", "Westruun"], ["Yasha", "Frumpkin", "Vex'ahlia"]
    lists = [first, [" Eldrinax", "Ironhold", "Eldrinax", "Westruun "], first, other, first]
    stdin = "".join(json.dumps({"text": "the elder nacks", "entities": names}) + "\n" for names in lists)
    out = io.StringIO()
    run(io.StringIO(stdin), out, None)
    assert [line["text"] for line in _lines(out.getvalue())] == ["the Eldrinax"] * 3 + ["the elder nacks"] + [
        "the Eldrinax"
    ]
    # the respaced list with a repeat is the first one; the other list's names leave no room for it (6 > 5)
    assert built == [first, other, first]


def test_help_says_the_formats_and_what_a_bad_line_gives() -> None:
    result = CliRunner().invoke(correct, ["--help"])
    for said in ('"entities" replaces', "null or left", '{"line": N, "error"', "character offsets", "Exit status"):
        assert said in result.output
