"""The shape checks of a semantic-layer source (indexers/sl_shapes.py): each field or item of the wrong shape named,
a few per field, and names defined twice."""

from indexers.sl_shapes import duplicate_names, shape_problems


def test_fields_of_the_wrong_shape_are_named_one_by_one():
    source = {
        "name": "orders", "table": "public.orders", "measures": "nope", "columns": {"a": 1},
        "grain": ["id", 42], "joins": [{"to": "customers"}, "customers"], "descriptions": "Orders",
        "exclude_columns": "note",  # a lone name is one name
        "segments": [{"expr": "x"}] * 5,
    }  # fmt: skip
    assert shape_problems(source) == [
        "columns: expected a list of mappings, got a mapping; it is left out",
        "joins[1]: expected a mapping, got the string 'customers'; it is left out",
        "measures: expected a list of mappings, got the string 'nope'; it is left out",
        "segments[0]: has no 'name'; it is left out",
        "segments[1]: has no 'name'; it is left out",
        "segments[2]: has no 'name'; it is left out",
        "segments: 2 more items like these are left out",
        "grain[1]: expected a name, got the number 42; it is left out",
        "descriptions: expected a mapping (e.g. user: <text>), got the string 'Orders'; it is left out",
    ]
    assert shape_problems({"name": "orders", "table": "t", "columns": [{"name": "id"}], "grain": "id"}) == []


def test_names_defined_again_are_named_three_at_most_per_field():
    data = {"measures": [{"name": "n"}] * 6, "columns": [{"name": "a"}, "odd", {"name": " a "}]}
    assert duplicate_names(data) == [
        "columns[2]: 'a' is defined again (as columns[0]); the later one is read: remove or rename one",
        *(
            f"measures[{i}]: 'n' is defined again (as measures[0]); the later one is read: remove or rename one"
            for i in (1, 2, 3)
        ),
        "measures: 2 more names like these are defined again",
    ]
