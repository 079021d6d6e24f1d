"""States: resuming continues bit-identically, in memory and through pickle; the
stream yields the same frames as generate()."""

import pickle

import numpy as np
import pytest

import rill_mrt

STYLE = {"mulan_tokens_25hz": [325, 98, 979, 657, 802, 453, 475, 622, 729, 934, 567, 782]}


@pytest.fixture(scope="module")
def straight(mrt):
    return mrt.generate(STYLE, frames=6)


def test_pickled_state_continues_like_one_call(mrt, straight):
    wav, _ = straight
    a, s = mrt.generate(STYLE, frames=2)
    s2 = pickle.loads(pickle.dumps(s))
    assert isinstance(s2, rill_mrt.State)
    b, s3 = mrt.generate(STYLE, frames=4, state=s2)
    np.testing.assert_array_equal(np.concatenate([a.samples, b.samples]), wav.samples)
    np.testing.assert_array_equal(np.concatenate([a.tokens, b.tokens]), wav.tokens)
    assert s3.frame == 6
    # bytes() / State.from_bytes is the same round trip.
    c, _ = mrt.generate(STYLE, frames=4, state=rill_mrt.State.from_bytes(bytes(s)))
    np.testing.assert_array_equal(c.samples, b.samples)


def test_tokens_state_continues_like_one_call(mrt):
    whole, _ = mrt.generate_tokens(STYLE, frames=5)
    a, s = mrt.generate_tokens(STYLE, frames=3)
    b, _ = mrt.generate_tokens(STYLE, frames=2, state=pickle.loads(pickle.dumps(s)))
    np.testing.assert_array_equal(np.concatenate([a, b]), whole)


def test_stream_matches_generate_and_resumes(mrt, straight):
    wav, _ = straight
    frames = list(mrt.stream(STYLE, frames=6))
    assert len(frames) == 6 and all(f.samples.shape == (1920, 2) for f in frames)
    np.testing.assert_array_equal(np.concatenate([f.samples for f in frames]), wav.samples)
    np.testing.assert_array_equal(np.concatenate([f.tokens for f in frames]), wav.tokens)
    # A stream's state (maybe with a frame in flight) resumes in generate() and stream().
    st = mrt.stream(STYLE)
    head = [next(st) for _ in range(3)]
    s = pickle.loads(pickle.dumps(st.state()))
    tail, _ = mrt.generate(STYLE, frames=3, state=s)
    np.testing.assert_array_equal(
        np.concatenate([f.samples for f in head] + [tail.samples]), wav.samples
    )
    tail2 = list(mrt.stream(STYLE, frames=3, state=s))
    np.testing.assert_array_equal(np.concatenate([f.samples for f in tail2]), tail.samples)


def test_stream_update_changes_the_music(mrt):
    st = mrt.stream(STYLE, frames=4)
    first = next(st)
    st.update({"drum_pianoroll_tokens": [1]}, temperature=0.5)
    with pytest.raises(ValueError, match="drum_pianoroll_tokens"):
        st.update({"drum_pianoroll_tokens": [5]})
    rest = list(st)
    assert len(rest) == 3 and first.samples.shape == (1920, 2)


def test_cross_mode_states_are_refused(mrt):
    _, tokens_state = mrt.generate_tokens(STYLE, frames=1)
    with pytest.raises(ValueError, match="generate_tokens"):
        mrt.generate(STYLE, frames=1, state=tokens_state)
    st = mrt.stream(STYLE)
    next(st)
    if st.state().frame == 2:  # two-stage: a frame in flight
        with pytest.raises(ValueError, match="in flight"):
            mrt.generate_tokens(STYLE, frames=1, state=st.state())


def test_corrupt_states_raise_value_error(mrt):
    _, s = mrt.generate(STYLE, frames=1)
    data = bytes(s)
    with pytest.raises(ValueError, match="not a rill_mrt state"):
        rill_mrt.State.from_bytes(b"garbage")
    with pytest.raises(ValueError, match="version"):
        rill_mrt.State.from_bytes(data[:7] + b"\x09" + data[8:])
    for bad in (data[: len(data) // 2], data[:100] + bytes([data[100] ^ 0xFF]) + data[101:]):
        state = rill_mrt.State.from_bytes(bad)
        with pytest.raises(ValueError, match="corrupt or incompatible rill_mrt state"):
            mrt.generate(STYLE, frames=1, state=state)
    with pytest.raises(TypeError):
        mrt.generate(STYLE, frames=1, state=b"not a state")
