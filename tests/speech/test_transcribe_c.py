"""examples/embed/transcribe.c (the recognizer's C API) against `tarn
transcribe` (the C++ Recognizer) on the bundled samples and model: the same
final transcript, greedy and with the word-list beam search (how often that
is what was said is examples/asr/eval.py's business), word lists read as the
CLI reads them; and clear refusals of a file at another sample rate, a
truncated file, a file written as a stream with its sizes never filled in,
an empty word list and an over-long line in one. Run by ctest
(example_transcribe_c), which passes both programs in the environment
(conftest.py).
"""

import itertools
import subprocess
import wave
from pathlib import Path

import pytest

ASR = Path(__file__).resolve().parents[2] / "examples" / "asr"
MODEL, WORDS = str(ASR / "model" / "asr.tarn"), str(ASR / "words.txt")
SAMPLES = ASR / "samples"


def last_line(command):
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr}"
    lines = done.stdout.splitlines()
    return lines[-1] if lines else ""


def test_c_api_transcribes_as_the_cli_does(transcribe_c, tarn):
    rows = [line.split("\t") for line in (SAMPLES / "transcripts.tsv").read_text().splitlines()[1:]]
    assert rows, "no samples in examples/asr/samples/transcripts.tsv"
    failures = []
    for name, reference in rows:
        wav = str(SAMPLES / name)
        greedy_c = last_line([transcribe_c, MODEL, wav])
        greedy_cpp = last_line([tarn, "transcribe", MODEL, wav, "--quiet"])
        beam_c = last_line([transcribe_c, MODEL, wav, WORDS])
        beam_cpp = last_line([tarn, "transcribe", MODEL, wav, "--words", WORDS, "--quiet"])
        print(f"{name}: reference {reference!r}; greedy C {greedy_c!r} C++ {greedy_cpp!r}; "
              f"word-list beam C {beam_c!r} C++ {beam_cpp!r}")
        if not greedy_cpp or not beam_cpp:  # every sample holds words
            failures.append(f"{name}: no transcript")
        if greedy_c != greedy_cpp:
            failures.append(f"{name}: greedy, C API {greedy_c!r} != C++ {greedy_cpp!r}")
        if beam_c != beam_cpp:
            failures.append(f"{name}: word-list beam, C API {beam_c!r} != C++ {beam_cpp!r}")
    assert not failures, "\n".join(failures)


def test_c_api_refuses_another_sample_rate_naming_both(transcribe_c, tmp_path):
    slow = tmp_path / "8k.wav"
    with wave.open(str(slow), "wb") as f:
        f.setnchannels(1)
        f.setsampwidth(2)
        f.setframerate(8000)
        f.writeframes(b"\0\0" * 8000)
    done = subprocess.run([transcribe_c, MODEL, str(slow)], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "8000 Hz" in done.stderr and "16000 Hz" in done.stderr, done.stderr


def test_c_api_refuses_a_truncated_file(transcribe_c, tmp_path):
    cut = tmp_path / "cut.wav"
    cut.write_bytes((SAMPLES / "en-gb_m3_012200.wav").read_bytes()[:20000])
    done = subprocess.run([transcribe_c, MODEL, str(cut)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stdout == "", done.stdout
    assert "the file is truncated" in done.stderr and "19956 are present" in done.stderr, done.stderr


def test_c_api_refuses_a_stream_written_file_as_the_cli_does(transcribe_c, tarn, tmp_path):
    # Its sizes never filled in: RIFF and data declare 0 bytes, the samples follow.
    # Also with audio whose first bytes read as a chunk's printable name.
    wav = (SAMPLES / "en-gb_m3_012200.wav").read_bytes()
    data = wav.index(b"data")
    for name, audio in (("stream.wav", wav[data + 8:]), ("printable.wav", b"AAAA" + wav[data + 8:])):
        stream = tmp_path / name
        stream.write_bytes(wav[:4] + bytes(4) + wav[8:data + 4] + bytes(4) + audio)
        messages = []
        for command in ([transcribe_c, MODEL, str(stream)], [tarn, "transcribe", MODEL, str(stream)]):
            done = subprocess.run(command, capture_output=True, text=True, timeout=60)
            assert done.returncode == 1 and done.stdout == "", (command, done.stdout)
            messages.append(done.stderr.strip().removeprefix("error: "))
        assert f"its data chunk declares 0 bytes of audio but {len(audio)} follow" in messages[1], messages
        assert messages[0] == messages[1], messages


def test_c_api_reads_a_word_list_as_the_cli_does(transcribe_c, tarn, tmp_path):
    # A word past the 1024th and one of 66 bytes, each whole.
    fillers = ["zq" + "".join(letters) for letters in itertools.product("bcdfghjk", repeat=4)][:1100]
    words = tmp_path / "words.txt"
    words.write_text("\n".join(["\ufeffhome", " one\t", "", "is\r"] + fillers + ["q" * 63 + "two", "two"]), encoding="utf-8")
    wav = str(SAMPLES / "en-gb_m3_012200.wav")
    c = last_line([transcribe_c, MODEL, wav, str(words)])
    cpp = last_line([tarn, "transcribe", MODEL, wav, "--words", str(words), "--quiet"])
    assert c == cpp and c.split()[-1] == "two", (c, cpp)


@pytest.mark.parametrize("text, message", [
    ("", "holds no words"),
    (" \n\t\n", "holds no words"),
    ("home\n" + "a" * 257 + "\none\n", "list.txt:2: a line over 256 bytes"),
])
def test_c_api_refuses_a_word_list_it_cannot_use(transcribe_c, tmp_path, text, message):
    words = tmp_path / "list.txt"
    words.write_text(text)
    done = subprocess.run([transcribe_c, MODEL, str(SAMPLES / "en-gb_m3_012200.wav"), str(words)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stdout == "", done.stdout
    assert message in done.stderr, done.stderr
