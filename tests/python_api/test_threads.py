"""Threads: each stepping its own session of one shared model gets the same
outputs as one thread stepping them in turn (the GIL is released while
stepping; the speed-up is measured by bench/python_threads.py, not here)."""

import subprocess
import sys
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


def test_the_gil_is_released_while_a_session_computes(models):
    """While one thread prefills, the main thread runs Python: it counts the
    iterations in which it found the session busy, i.e. ran while the
    prefill was inside the runtime. Were the GIL held there, it could run
    none of them."""
    model = tarn.Model(models["tokens"])
    session = model.session()
    tokens = np.arange(200_000, dtype=np.int32) % model.config.vocab_size
    thread = threading.Thread(target=session.prefill, args=(tokens,))
    thread.start()
    iterations_inside = 0
    while thread.is_alive():
        try:
            session.position  # takes the session's lock, as every call does
        except tarn.InvalidArgumentError as e:
            assert "in use by another thread" in str(e)
            iterations_inside += 1
    thread.join()
    assert session.position == len(tokens)
    assert iterations_inside > 1


_EXIT_WITH_A_DAEMON_INSIDE_A_CALL = """
import gc, sys, threading, time
import numpy as np
import tarn

# A cycle collected while Python finalizes: its sleep, the GIL released,
# lets the daemon threads' calls end then, when taking the GIL back ends
# a thread (pthread_exit before Python 3.14).
gc.disable()
class SlowFinalizer:
    def __del__(self, sleep=time.sleep):
        sleep(0.2)
cycle = SlowFinalizer()
cycle.me = cycle
del cycle

session = tarn.Model(sys.argv[1]).session()
recognizer = tarn.Recognizer(tarn.Model(sys.argv[2]))
audio = np.zeros(1600, np.float32)
running = [threading.Event(), threading.Event()]

def step():
    while True:
        session.step_token(1)
        running[0].set()

def listen():
    while True:
        recognizer.accept(audio)
        recognizer.pop_results()
        running[1].set()

for work in (step, listen):
    threading.Thread(target=work, daemon=True).start()
for event in running:
    event.wait()
print("exiting", flush=True)
"""


def test_python_exits_cleanly_with_daemon_threads_inside_calls(models, tmp_path):
    """Daemon threads looping tarn calls when the main thread exits: the
    process exits 0 (it aborted when a thread's call ended during
    finalization) and nanobind reports no leaks for the objects they hold."""
    from conftest import SPEECH_MODEL

    script = tmp_path / "exit.py"
    script.write_text(_EXIT_WITH_A_DAEMON_INSIDE_A_CALL)
    result = subprocess.run([sys.executable, str(script), str(models["tokens"]), str(SPEECH_MODEL)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "exiting\n"
    assert "leaked" not in result.stderr


def test_a_call_from_a_finalizer_at_exit_returns(tmp_path):
    """A module-level object whose __del__ calls the runtime when Python
    exits: the main thread, which finalizes, gets its call back (the guard
    that parks other threads then must not park it: the process hung)."""
    from conftest import SPEECH_MODEL

    script = tmp_path / "del_at_exit.py"
    script.write_text(
        "import sys\n"
        "import tarn\n"
        "class Flush:\n"
        "    def __init__(self, recognizer):\n"
        "        self.recognizer = recognizer\n"
        "    def __del__(self):\n"
        "        self.recognizer.final_result()\n"
        "        print('flushed', flush=True)\n"
        "flush = Flush(tarn.Recognizer(tarn.Model(sys.argv[1])))\n"
        "print('exiting', flush=True)\n"
    )
    result = subprocess.run([sys.executable, str(script), str(SPEECH_MODEL)], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "exiting\nflushed\n", result.stdout


def test_objects_made_before_a_fork_work_in_the_child(models, tmp_path):
    """multiprocessing forks by default on Linux: a session, batch or
    recognizer made with 2 threads before the fork waited forever in the
    child for threads that stayed in the parent. In the child they run on
    its own thread, with the bits the parent gets."""
    from conftest import SAMPLES, SPEECH_MODEL

    script = tmp_path / "fork.py"
    script.write_text(
        "import multiprocessing, sys\n"
        "import numpy as np\n"
        "import tarn\n"
        "model, speech = tarn.Model(sys.argv[1]), tarn.Model(sys.argv[2])\n"
        "session = model.session(num_threads=2)\n"
        "batch = tarn.SessionBatch(model, max_streams=2, num_threads=2)\n"
        "streams = [model.session(), model.session()]\n"
        "recognizer = tarn.Recognizer(speech, threads=2)\n"
        "samples = tarn.read_wav(sys.argv[3])\n"
        "session.step_token(1)\n"
        "batch.step_tokens(streams, [1, 2])\n"
        "def work(queue):\n"
        "    queue.put((session.step_token(2).copy(), batch.step_tokens(streams, [3, 4]).copy(),\n"
        "               recognizer.transcribe(samples).text))\n"
        "queue = multiprocessing.get_context('fork').Queue()\n"
        "child = multiprocessing.get_context('fork').Process(target=work, args=(queue,), daemon=True)\n"
        "child.start()\n"
        "in_child = queue.get(timeout=60)\n"
        "child.join(60)\n"
        "assert child.exitcode == 0, child.exitcode\n"
        "here = (session.step_token(2), batch.step_tokens(streams, [3, 4]), recognizer.transcribe(samples).text)\n"
        "assert np.array_equal(in_child[0].view(np.uint32), here[0].view(np.uint32))\n"
        "assert np.array_equal(in_child[1].view(np.uint32), here[1].view(np.uint32))\n"
        "assert in_child[2] == here[2], (in_child[2], here[2])\n"
        "print('same')\n"
    )
    result = subprocess.run([sys.executable, str(script), str(models["tokens"]), str(SPEECH_MODEL), str(SAMPLES[0])],
                            capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "same\n"
