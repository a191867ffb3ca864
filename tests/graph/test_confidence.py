from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from signet_rl.graph.confidence import (
    DEFAULT_REASON,
    LADDER,
    Reason,
    check_confidence,
    demote,
    ladder_step,
    move,
    promote,
    reason_codes,
)


def test_priors_and_order():
    assert {r.value: r.prior for r in Reason} == {
        "user-asserted": 1.0, "multi-memory": 0.9, "single-memory": 0.7,
        "pattern-matched": 0.5, "inferred": 0.4, "llm-uncertain": 0.3,
    }
    assert [r.prior for r in LADDER] == sorted(r.prior for r in Reason)
    assert DEFAULT_REASON is Reason.SINGLE_MEMORY and DEFAULT_REASON.prior == 0.7


def test_unknown_reason_lists_the_allowed_ones():
    with pytest.raises(ValueError, match=r"unknown reason 'hunch'; expected one of: llm-uncertain, inferred, "
                                         r"pattern-matched, single-memory, multi-memory, user-asserted"):
        Reason.parse("hunch")
    with pytest.raises(ValueError, match=r"row 1: unknown reason 'gut'"):
        reason_codes(["inferred", "gut"])


def test_promote_and_demote_stop_at_their_bounds():
    assert promote("inferred") is Reason.PATTERN_MATCHED
    assert promote(Reason.MULTI_MEMORY) is Reason.MULTI_MEMORY  # machines never make user-asserted
    assert promote(Reason.MULTI_MEMORY, ceiling=Reason.USER_ASSERTED) is Reason.USER_ASSERTED
    assert promote(Reason.USER_ASSERTED) is Reason.USER_ASSERTED  # already above the ceiling: stays
    assert demote("llm-uncertain") is Reason.LLM_UNCERTAIN
    assert demote("user-asserted") is Reason.MULTI_MEMORY


def test_move_keeps_confidence_on_the_right_side_of_the_prior():
    assert move(0.7, "single-memory", +1) == (Reason.MULTI_MEMORY, 0.9)
    assert move(0.95, "single-memory", +1) == (Reason.MULTI_MEMORY, 0.95)  # learned evidence is kept
    assert move(0.7, "single-memory", -2) == (Reason.INFERRED, 0.4)
    assert move(0.2, "single-memory", -1) == (Reason.PATTERN_MATCHED, 0.2)
    assert move(0.5, "pattern-matched", 0) == (Reason.PATTERN_MATCHED, 0.5)


@pytest.mark.parametrize("bad", [math.nan, -0.1, 1.5, math.inf])
def test_bad_confidence_is_named(bad):
    with pytest.raises(ValueError, match=r"dependency dep-1: confidence .* is not a number in \[0, 1\]"):
        check_confidence(bad, where="dependency dep-1")


@given(st.lists(st.tuples(st.sampled_from(list(Reason)), st.integers(-6, 6),
                          st.floats(0, 1, allow_nan=False)), min_size=1, max_size=30))
def test_vectorised_step_matches_move(rows):
    codes = np.asarray([r.rung for r, _, _ in rows])
    steps = np.asarray([s for _, s, _ in rows])
    conf = np.asarray([c for _, _, c in rows], dtype=np.float32)
    new_codes, new_conf = ladder_step(codes, steps, conf)
    for (r, s, c), code, nc in zip(rows, new_codes, new_conf, strict=True):
        expected_reason, expected_conf = move(float(np.float32(c)), r, s)
        assert LADDER[code] is expected_reason
        assert nc == pytest.approx(expected_conf, abs=1e-6)


# -- bad input to move / ladder_step (issue 31 item 12) ----------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"codes": [-1]}, "ladder_step: codes[0] = -1 is not a ladder rung in [0, 5]"),
        ({"codes": [3, 6]}, "ladder_step: codes[1] = 6 is not a ladder rung in [0, 5]"),
        ({"codes": [1.5]}, "ladder_step: codes must be integer rungs, got dtype float64"),
        ({"steps": 1.5}, "ladder_step: steps must be integers, got dtype float64"),
        ({"steps": [1, 1]}, "ladder_step: steps of shape (2,) do not match codes of shape (1,)"),
        ({"confidence": [math.nan]}, "ladder_step confidence[0]: confidence nan is not a number in [0, 1]"),
        ({"confidence": [5.0]}, "ladder_step confidence[0]: confidence 5.0 is not a number in [0, 1]"),
        ({"confidence": [-0.5]}, "ladder_step confidence[0]: confidence -0.5 is not a number in [0, 1]"),
        (
            {"confidence": [0.5, 0.5]},
            "ladder_step: confidence of shape (2,) does not match codes of shape (1,)",
        ),
        (
            {"floor": Reason.MULTI_MEMORY, "ceiling": Reason.INFERRED},
            "floor 'multi-memory' (rung 4) is above ceiling 'inferred' (rung 1)",
        ),
        ({"ceiling": "hunch"}, "unknown reason 'hunch'"),
    ],
)
def test_ladder_step_refuses_bad_input(kwargs, message):
    args = {"codes": [2], "steps": 1, "confidence": None, **kwargs}
    with pytest.raises(ValueError, match=re.escape(message)):
        ladder_step(np.asarray(args.pop("codes")), **args)


def test_a_negative_rung_no_longer_wraps_to_user_asserted():
    # -1 used to index the last prior: an unknown edge came back user-asserted at confidence 1.0
    with pytest.raises(ValueError, match=re.escape("codes[0] = -1 is not a ladder rung")):
        ladder_step(np.asarray([-1]), 0)
    codes, conf = ladder_step(np.asarray([0, 5]), np.asarray([-1, 1]), ceiling=Reason.USER_ASSERTED)
    assert codes.tolist() == [0, 5] and conf.tolist() == pytest.approx([0.3, 1.0])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"floor": Reason.MULTI_MEMORY, "ceiling": Reason.INFERRED},
            "floor 'multi-memory' (rung 4) is above ceiling 'inferred' (rung 1)",
        ),
        ({"steps": 1.5}, "move: steps must be an integer, got 1.5"),
        ({"confidence": 5.0}, "move: confidence 5.0 is not a number in [0, 1]"),
    ],
)
def test_move_refuses_bad_input(kwargs, message):
    args = {"confidence": 0.7, "reason": "single-memory", "steps": 1, **kwargs}
    with pytest.raises(ValueError, match=re.escape(message)):
        move(**args)
