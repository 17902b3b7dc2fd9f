"""30 minutes of audio through `tarn transcribe -` in a few seconds
(long_stream.py, with the energy model reading every utterance as "a"):
flat memory, every utterance out. The hour with the trained model is
long_stream.py --manifest, run by hand (examples/asr/README.md). Run by ctest
(speech_long_stream), which passes the fixtures and `tarn` in the
environment (conftest.py).
"""

import long_stream


def test_thirty_minutes_flat_memory_every_utterance(fixtures, tarn):
    assert long_stream.main([
        "--tarn", tarn, "--model", str(fixtures / "energy.tarn"), "--minutes", "30",
        "--wav", str(fixtures / "speech.wav"), "--expect-text", "a"]) == 0
