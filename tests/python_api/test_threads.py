"""Threads: each stepping its own session of one shared model gets the same
outputs as one thread stepping them in turn (the GIL is released while
stepping; the speed-up is measured by bench/python_threads.py, not here)."""

import threading

import numpy as np

import tarn


def test_two_threads_same_outputs_as_one(models):
    model = tarn.Model(models["tokens"])
    rng = np.random.default_rng(9)
    streams = [rng.integers(0, model.config.vocab_size, 300) for _ in range(2)]

    def run(tokens):
        session = model.session()
        return np.stack([session.step_token(int(t)).copy() for t in tokens])

    alone = [run(s) for s in streams]
    threaded = [None, None]

    def work(i):
        threaded[i] = run(streams[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for a, b in zip(alone, threaded):
        assert np.array_equal(a.view(np.uint32), b.view(np.uint32))


def test_recognizers_in_threads_match(models):
    from conftest import SAMPLES, SPEECH_MODEL

    model = tarn.Model(SPEECH_MODEL)
    alone = [tarn.transcribe(model, s) for s in SAMPLES[:2]]
    threaded = [None, None]

    def work(i):
        threaded[i] = tarn.transcribe(model, SAMPLES[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert threaded == alone
