"""CPU lists (`--cpus`, the `cpus` configuration key): parsing, formatting and the availability check."""

from __future__ import annotations

import pytest

from perfci.cpus import format_cpu_list, parse_cpu_list, unavailable


@pytest.mark.parametrize(
    ("text", "cpus"),
    [("3", (3,)), ("2-3", (2, 3)), ("0,4-7", (0, 4, 5, 6, 7)), ("5,1,1-2", (1, 2, 5)), (" 0 , 2 ", (0, 2))],
)
def test_parse_cpu_list(text: str, cpus: tuple[int, ...]) -> None:
    assert parse_cpu_list(text) == cpus


@pytest.mark.parametrize(
    ("text", "problem"),
    [("", "empty item"), ("1,,2", "empty item"), ("a", "not a CPU number"), ("-1", "not a CPU number"),
     ("3-1", "runs backwards"), ("2-", "not a CPU number"), ("1.5", "not a CPU number")],
)  # fmt: skip
def test_parse_cpu_list_refuses_bad_text(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_cpu_list(text)


def test_format_cpu_list_is_the_inverse_of_parsing() -> None:
    assert format_cpu_list([7, 0, 4, 5, 6]) == "0,4-7"
    assert format_cpu_list([2]) == "2"
    for text in ("0,4-7", "1-3,9", "12"):
        assert format_cpu_list(parse_cpu_list(text)) == text


def test_unavailable_names_the_missing_cpus_and_the_available_ones() -> None:
    assert unavailable((0, 1), {0, 1, 2}) is None
    message = unavailable((1, 8, 9), {0, 1})
    assert message == "CPU(s) 8-9 not available to this process (available: 0-1)"
