"""The GIL is released while generating: other Python threads run meanwhile."""

import threading
import time


def test_generate_releases_the_gil(mrt):
    done = threading.Event()
    worker = threading.Thread(target=lambda: (mrt.generate({}, frames=8), done.set()))
    ticks = 0
    worker.start()
    time.sleep(0.05)  # let the call start
    while not done.is_set():
        ticks += 1
        time.sleep(0.002)
    worker.join()
    # Holding the GIL for the whole call (~0.5 s or more) would leave ~0 ticks.
    assert ticks >= 20, ticks
