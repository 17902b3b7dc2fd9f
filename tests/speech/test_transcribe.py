"""`tarn transcribe`: outputs, input checks, options. Run by ctest
(speech_transcribe_cli), which passes the fixtures and `tarn` in the
environment.

energy.tarn (make_fixtures.py) reads every stretch of speech as "a";
hamming.tarn is a random model whose (meaningless but deterministic) output
shows that different routes to the same samples agree.
"""

import json
import os
import subprocess
from pathlib import Path

import pytest

FIXTURES = Path(os.environ["TARN_SPEECH_FIXTURES"]) if "TARN_SPEECH_FIXTURES" in os.environ else None
TARN = os.environ.get("TARN_BIN")
failures = []

pytestmark = pytest.mark.skipif(
    not TARN or FIXTURES is None, reason="TARN_BIN or TARN_SPEECH_FIXTURES is not set: run through ctest")


def transcribe(*args, stdin=None):
    return subprocess.run(
        [TARN, "transcribe", *map(str, args)], input=stdin, capture_output=True, timeout=120
    )


def check(name, condition, detail=""):
    print(("ok   " if condition else "FAIL ") + name)
    if not condition:
        failures.append(name)
        if detail:
            print("     " + str(detail).replace("\n", "\n     "))


def stdout(result):
    return result.stdout.decode()


def last_line(result):
    lines = stdout(result).rstrip("\n").split("\n")
    return lines[-1]


def error_case(name, args, *needles, stdin=None):
    r = transcribe(*args, stdin=stdin)
    err = r.stderr.decode(errors="replace")
    check(name, r.returncode != 0 and all(n in err for n in needles), f"rc {r.returncode}: {err}")


def test_transcribe_outputs_inputs_and_options():
    energy, random_model = FIXTURES / "energy.tarn", FIXTURES / "hamming.tarn"
    speech, two = FIXTURES / "speech.wav", FIXTURES / "two.wav"

    # Output shape.
    r = transcribe(energy, speech, "-q")
    check("the transcript alone on the last line of stdout", r.returncode == 0 and stdout(r) == "a\n", stdout(r))
    r = transcribe(energy, two)
    err = r.stderr.decode()
    check("two utterances, one transcript", stdout(r) == "a a\n", stdout(r))
    check("partials and utterances on stderr", "partial: a" in err and "utterance" in err, err)
    r = transcribe(energy, two, "--json", "-q")
    j = json.loads(stdout(r))
    check("--json: text, words with times, duration",
          j["text"] == "a a" and [w["word"] for w in j["words"]] == ["a", "a"]
          and 0.2 < j["words"][0]["start"] < 0.45 and j["words"][0]["end"] > j["words"][0]["start"]
          and abs(j["duration"] - 4.6) < 0.01, j)
    r = transcribe(energy, two, "--utterances", "-q")
    check("--utterances: a line per utterance", stdout(r) == "a\na\n", stdout(r))
    r = transcribe(energy, two, "--utterances", "--json", "-q")
    lines = [json.loads(line) for line in stdout(r).splitlines()]
    check("--utterances --json: an object per utterance",
          len(lines) == 2 and all(u["text"] == "a" and u["end"] > u["start"] for u in lines), lines)
    r = transcribe(energy, two, "--endpoint-ms", "0", "--utterances", "-q")
    check("--endpoint-ms 0: one utterance", stdout(r) == "aa\n", stdout(r))
    r = transcribe(energy, two, "--stats", "-q")
    err = r.stderr.decode()
    check("--stats: real-time factor and step latency", "real-time factor" in err and "p99" in err and "mean" in err, err)

    # Every route to the same samples gives the same result.
    reference = transcribe(random_model, speech, "--json", "-q")
    check("random model runs", reference.returncode == 0, reference.stderr.decode())
    for name, args, stdin in [
        ("raw PCM on stdin", [random_model, "-", "--json", "-q"], (FIXTURES / "speech.raw").read_bytes()),
        ("stereo, downmixed", [random_model, FIXTURES / "stereo.wav", "--json", "-q"], None),
        ("32-bit float WAV", [random_model, FIXTURES / "float.wav", "--json", "-q"], None),
        ("FLAC", [random_model, FIXTURES / "speech.flac", "--json", "-q"], None),
        ("--chunk-ms 10", [random_model, speech, "--json", "-q", "--chunk-ms", "10"], None),
        ("--chunk-ms 37", [random_model, speech, "--json", "-q", "--chunk-ms", "37"], None),
    ]:
        r = transcribe(*args, stdin=stdin)
        check(f"same result: {name}", r.returncode == 0 and r.stdout == reference.stdout,
              f"{r.stdout!r} vs {reference.stdout!r}\n{r.stderr.decode()}")
    # Lossy encodings libsndfile decodes (they were refused): the energy
    # model hears the same speech in them.
    for name in ("ulaw.wav", "adpcm.wav"):
        r = transcribe(energy, FIXTURES / name, "-q")
        check(f"{name} is read", r.returncode == 0 and stdout(r) == stdout(transcribe(energy, speech, "-q")),
              f"{stdout(r)!r}\n{r.stderr.decode()}")
    r = transcribe(random_model, FIXTURES / "stereo.wav")
    check("stereo: a note says so", "2 channels" in r.stderr.decode(), r.stderr.decode())
    r = transcribe(random_model, "-", stdin=(FIXTURES / "speech.raw").read_bytes() + b"\x01")
    check("stdin: an odd last byte is reported", r.returncode == 0 and "last byte" in r.stderr.decode(), r.stderr.decode())
    r = transcribe(random_model, "-", "-q", stdin=b"")
    check("empty stdin: an empty transcript", r.returncode == 0 and stdout(r) == "\n", r)

    # Decoding options.
    words = FIXTURES / "words.txt"
    words.write_text("hello\nworld\n\nopen\nthe\ndoor\n")
    r = transcribe(random_model, speech, "--words", words, "-q")
    listed = {"hello", "world", "open", "the", "door"}
    check("--words: only listed words", r.returncode == 0 and set(last_line(r).split()) <= listed, stdout(r) + r.stderr.decode())
    r = transcribe(random_model, speech, "--beam", "4", "-q")
    check("--beam 4 runs", r.returncode == 0, r.stderr.decode())
    error_case("--words with --beam 1", [random_model, speech, "--words", words, "--beam", "1"], "--beam")
    bad_words = FIXTURES / "bad_words.txt"
    bad_words.write_text("hello\nna\u00efve\n")
    error_case("--words with an unspellable word", [random_model, speech, "--words", bad_words], "na\u00efve", "\u00ef")
    hotwords = FIXTURES / "hotwords.txt"
    hotwords.write_text("hello world\n\n  open the door :2.5\nthe\t:0.5\n")
    r = transcribe(random_model, speech, "--hotwords", hotwords, "-q")
    check("--hotwords runs (beam 8)", r.returncode == 0, r.stderr.decode())
    r = transcribe(random_model, speech, "--hotwords", hotwords, "--words", words, "--hotword-boost", "3", "-q")
    check("--hotwords with --words: only listed words",
          r.returncode == 0 and set(last_line(r).split()) <= listed, stdout(r) + r.stderr.decode())
    error_case("--hotwords with --beam 1", [random_model, speech, "--hotwords", hotwords, "--beam", "1"], "--beam")
    error_case("--hotword-boost 0", [random_model, speech, "--hotwords", hotwords, "--hotword-boost", "0"],
               "hotword-boost")
    for name, text, needles in [
        ("an unspellable hotword: file, line, phrase, character", "hello\n\nna\u00efve world\n",
         ["hotwords_bad.txt:3", "na\u00efve world", "\u00ef"]),
        ("a bad boost", "hello :x\n", ["hotwords_bad.txt:1", ":x"]),
        # strtof reads hexadecimal: ":0x10" was a boost of 16.
        ("a hexadecimal boost", "hello :0x10\n", ["hotwords_bad.txt:1", ":0x10"]),
        ("a negative boost", "hello\nworld :-1\n", ["hotwords_bad.txt:2", ":-1"]),
        ("a boost without a phrase", ":2\n", ["hotwords_bad.txt:1", "without a phrase"]),
        ("an empty hotword file", "\n  \n", ["holds no phrases"]),
        # Boosts reach the decoder from their own lines: it refuses one
        # above its limit, and the message names the line.
        ("a boost above the limit after a tab", "hello world\n\nthe\t:101\n", ["hotwords_bad.txt:3", "101"]),
        # Classic Mac OS line ends are line ends, not word gaps.
        ("lines ended by a lone CR", "hello :2\rna\u00efve world\r", ["hotwords_bad.txt:2", "na\u00efve world"]),
    ]:
        bad = FIXTURES / "hotwords_bad.txt"
        bad.write_bytes(text.encode())
        error_case(f"--hotwords with {name}", [random_model, speech, "--hotwords", bad], *needles)
    bad = FIXTURES / "hotwords_bad.txt"
    bad.write_text("hello world\nopen the window\n")
    error_case("--hotwords with a word the word list lacks", [random_model, speech, "--hotwords", bad, "--words", words],
               "hotwords_bad.txt:2", "\"window\" is not in the word list")
    error_case("--chunk-ms below 10", [energy, speech, "--chunk-ms", "5"], "chunk-ms")
    error_case("--chunk-ms above 100", [energy, speech, "--chunk-ms", "150"], "chunk-ms")

    # Inputs it refuses, and why.
    error_case("wrong sample rate names both rates", [energy, FIXTURES / "speech22.wav"], "22050 Hz", "16000 Hz")
    error_case("truncated WAV", [energy, FIXTURES / "truncated.wav"], "truncated")
    error_case("header-only WAV", [energy, FIXTURES / "header_only.wav"], "truncated")
    # A streaming writer's placeholder size 0 (libsndfile reads no audio).
    placeholder = bytearray((FIXTURES / "speech.wav").read_bytes())
    at = placeholder.index(b"data")
    placeholder[at + 4 : at + 8] = bytes(4)
    (FIXTURES / "zero_size.wav").write_bytes(placeholder)
    error_case("WAV whose data chunk declares 0 bytes", [energy, FIXTURES / "zero_size.wav"],
               "declares 0 bytes of audio but", "sox --ignore-length")
    # A finished file (its RIFF size its length) that holds no audio, a LIST
    # chunk after its data chunk: an empty transcript.
    empty = bytes(placeholder[: at + 8]) + b"LIST" + (4).to_bytes(4, "little") + b"INFO"
    empty = empty[:4] + (len(empty) - 8).to_bytes(4, "little") + empty[8:]
    (FIXTURES / "empty_list.wav").write_bytes(empty)
    r = transcribe(energy, FIXTURES / "empty_list.wav", "-q")
    check("a finished WAV of no audio: an empty transcript", r.returncode == 0 and stdout(r) == "\n", r.stderr.decode())
    error_case("garbage", [energy, FIXTURES / "garbage.wav"], "cannot read it as audio")
    error_case("missing file", [energy, FIXTURES / "no-such.wav"], "cannot read it as audio")
    error_case("model without a front end", [FIXTURES / "noaudio.tarn", speech], "no audio front end")
    error_case("model without labels", [FIXTURES / "nolabels.tarn", speech], "labels")

    assert not failures, f"{len(failures)} failure(s): " + "; ".join(failures)
