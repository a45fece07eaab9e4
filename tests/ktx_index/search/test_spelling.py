"""The one edit budget every fuzzy match asks, and the typo correction built on it."""

from ktx_index.search.engine import IDENTIFIER_EDITS
from ktx_index.search.spelling import TERM_EDITS, edit_budget, nearest_term
from ktx_index.tools.dictionary import VALUE_EDITS


def test_a_budget_is_one_edit_per_step_reached():
    assert [edit_budget(n, (4, 8)) for n in (0, 3, 4, 7, 8, 20)] == [0, 0, 1, 1, 2, 2]
    assert edit_budget(5, ()) == 0


def test_each_callers_steps_keep_the_budget_it_had():
    # the budgets as each caller wrote them before they shared edit_budget
    term = {n: 0 if n < 4 else 1 if n < 8 else 2 for n in range(40)}
    identifier = {n: 0 if n < 8 else 1 if n < 12 else 2 for n in range(40)}
    value = {n: 0 if n < 4 else 1 if n <= 5 else 2 if n <= 12 else 3 for n in range(40)}
    assert {n: edit_budget(n, TERM_EDITS) for n in range(40)} == term
    assert {n: edit_budget(n, IDENTIFIER_EDITS) for n in range(40)} == identifier
    assert {n: edit_budget(n, VALUE_EDITS) for n in range(40)} == value


def test_a_typo_is_corrected_within_its_budget_only():
    vocabulary = {"customer": 5, "custumer": 1, "order": 3}
    assert nearest_term("cusotmer", vocabulary) == "customer"  # one transposition
    assert nearest_term("custamer", vocabulary) == "customer"  # one edit from both: the more frequent
    assert nearest_term("ordr", vocabulary) == "order"
    assert nearest_term("odr", vocabulary) is None  # three letters: no edits allowed
    assert nearest_term("1234", {"1235": 1}) is None  # numbers are never corrected
