"""The settings schema's rules, kind by kind, and how ``parse`` reads a group: each rule decided
once in ``config/schema.py`` (the module docstring says them), each refusal naming its key."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest
from omegaconf import OmegaConf

from isaacgymenvs_gmi.config import ConfigError
from isaacgymenvs_gmi.config.schema import (
    FLAG,
    Choice,
    Device,
    EpochLimit,
    Folder,
    Int,
    Many,
    Name,
    Real,
    Section,
    Settings,
    Text,
    keys,
    nested,
    parse,
    setting,
)


def refused(kind, value) -> str:
    with pytest.raises(ConfigError) as caught:
        kind.check("g.key", value)
    assert caught.value.key == "g.key"
    return str(caught.value)


@pytest.mark.parametrize(
    ("value", "typed"),
    [(3, 3), ("12", 12), (" 7 ", 7), ("+5", 5), (0, 0)],
    ids=["int", "digit string", "padded", "signed", "zero"],
)
def test_an_integer_is_an_int_or_a_string_of_digits(value, typed):
    assert Int(0).check("g.key", value) == typed


@pytest.mark.parametrize("value", [True, 2.0, 2.5, "2.0", "two", None, -1])
def test_an_integer_is_not_a_bool_a_float_text_null_or_below_the_minimum(value):
    assert refused(Int(0), value).endswith("must be an integer >= 0")


def test_an_integer_range_auto_optional_and_the_reason():
    text = "g.key=5: must be an integer in [1, 4] (per device)"
    assert refused(Int(1, 4, why="per device"), 5) == text
    assert Int(1, auto=True).check("g.key", "AUTO") is None
    assert refused(Int(1, auto=True), "automatic").endswith("must be an integer >= 1 or auto")
    assert Int(1, optional=True).check("g.key", None) is None
    assert Int(1, optional=True).check("g.key", "") is None  # key= on the command line


@pytest.mark.parametrize(("value", "typed"), [(1, 1.0), (2.5, 2.5), (1e-4, 1e-4)])
def test_a_real_is_an_int_or_a_float(value, typed):
    assert Real().check("g.key", value) == typed


@pytest.mark.parametrize("value", ["1e-4", True, math.inf, math.nan, None, [1.0]])
def test_a_real_is_finite_and_not_text_a_bool_or_a_list(value):
    assert refused(Real(), value).endswith("must be a finite number")


@pytest.mark.parametrize(
    ("kind", "inside", "outside", "text"),
    [
        (Real(0.0, open_low=True), 1e-9, 0.0, "must be a number > 0"),
        (Real(0.0), 0.0, -1e-9, "must be a number >= 0"),
        (Real(high=1.0, open_high=True), 0.5, 1.0, "must be a number < 1"),
        (Real(0.0, 1.0, open_low=True), 1.0, 0.0, "must be a number in (0, 1]"),
        (Real(0.0, 100.0), 100.0, 100.5, "must be a number in [0, 100]"),
    ],
)
def test_a_reals_bounds_open_or_closed(kind, inside, outside, text):
    assert kind.check("g.key", inside) == inside
    assert refused(kind, outside).endswith(text)


def test_a_flag_is_true_or_false_only():
    assert FLAG.check("g.key", True) is True and FLAG.check("g.key", False) is False
    for value in (1, 0, "true", "yes", None):
        assert refused(FLAG, value).endswith("must be true or false")


def test_a_choice_is_matched_without_case_and_returned_canonical():
    kind = Choice(("auto", "MPS", "cpu"))
    assert kind.check("g.key", " mps ") == "MPS" and kind.check("g.key", "Auto") == "auto"
    assert refused(kind, "gpu") == "g.key='gpu': must be one of 'auto', 'MPS', 'cpu'"
    assert refused(kind, 1).endswith("must be one of 'auto', 'MPS', 'cpu'")
    assert Choice(("a",), optional=True).check("g.key", None) is None


def test_text_is_a_non_empty_string():
    assert Text(what="a name").check("g.key", "runs") == "runs"
    assert Text(lower=True).check("g.key", " Ant ") == "ant"
    assert refused(Text(what="a name"), "  ").endswith("must be a name")
    assert refused(Text(what="a name"), 3).endswith("must be a name")
    assert Text(optional=True).check("g.key", "") is None  # empty means null when optional
    assert refused(Text(), None).endswith("must be a folder")


@pytest.mark.parametrize("value", ["run_1", "a.b-c+d=e@f,g", 123, "x" * 200])
def test_a_name_is_one_folder_name(value):
    assert Name().check("g.key", value) == str(value)


@pytest.mark.parametrize("value", ["..", "../x", "a/b", "/abs", "a b", "", "x" * 201, True, 1.5])
def test_a_name_is_never_a_path_nor_too_long(value):
    assert "must be a folder name of at most 200 characters" in refused(Name(), value)


def test_a_device_is_cpu_or_cuda_with_an_index():
    assert [Device().check("g.key", v) for v in ("cpu", " CUDA ", "cuda:1")] == [
        "cpu",
        "cuda",
        "cuda:1",
    ]
    for value in ("tpu", "cuda:", "cuda:x", 0, None):
        assert refused(Device(), value).endswith("must be 'cpu', 'cuda' or 'cuda:N'")


def test_an_epoch_limit_is_a_whole_number_from_one_or_minus_one():
    assert [EpochLimit().check("g.key", v) for v in (1, "7", 3.0, -1)] == [1, 7, 3, -1]
    for value in (0, -3, 2.5, "abc", True, None):
        assert refused(EpochLimit(), value).endswith("must be an integer >= 1, or -1 for no limit")
    assert EpochLimit(optional=True).check("g.key", "") is None


def test_a_folder_exists_and_comes_back_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "assets").mkdir()
    assert Folder("assets").check("g.key", "assets") == str(tmp_path / "assets")
    (tmp_path / "file").write_text("")
    for value in ("missing", "file", "", 3):
        assert refused(Folder("assets"), value).endswith("must be an existing folder (assets)")
    assert Folder(optional=True).check("g.key", "") is None


def test_a_section_is_a_mapping():
    assert Section().check("g.key", OmegaConf.create({"a": 1})) == {"a": 1}
    assert refused(Section(), [1]).endswith("must be a mapping of settings")
    assert Section(optional=True).check("g.key", None) is None


def test_a_list_checks_each_item_naming_its_index():
    kind = Many(Real(0.0, 100.0, open_low=True), what="percentages", optional=True)
    assert kind.check("g.key", [50, 25.5]) == (50.0, 25.5)
    assert kind.check("g.key", OmegaConf.create([10])) == (10.0,)  # a ListConfig
    assert kind.check("g.key", None) is None
    assert refused(kind, []).endswith("must be null or a non-empty list of percentages")
    assert refused(kind, 50).endswith("must be null or a non-empty list of percentages")
    with pytest.raises(ConfigError, match=r"^g\.key\[1\]=0: must be a number in \(0, 100\]"):
        kind.check("g.key", [50, 0])
    assert Many(Int(0), what="ids", empty=True).check("g.key", []) == ()


@dataclass(frozen=True)
class Inner(Settings):
    depth: int = setting(2, Int(1))


@dataclass(frozen=True)
class Outer(Settings):
    PREFIX = "outer"
    OTHERS = ("theirs",)
    rate: float = setting(0.5, Real(0.0, 1.0))
    async_: bool = setting(False, FLAG)  # the key is "async": a trailing _ is dropped
    name: str = setting("x", Text(what="a name"), key="title", required=True)
    inner: Inner = nested(Inner)

    def cross_check(self, prefix: str) -> None:
        if self.async_ and self.rate > 0.9:
            raise ConfigError(f"{prefix}.rate", self.rate, "must be <= 0.9 with async")


def test_a_group_takes_defaults_reads_its_keys_and_refuses_unknown_ones():
    given = {"rate": 0.8, "async": True, "title": "a", "inner": {"depth": "3"}}
    got = parse(Outer, given, "outer")
    assert got == Outer(rate=0.8, async_=True, name="a", inner=Inner(3))
    assert keys(Outer) == ("rate", "async", "title", "inner")
    assert parse(Outer, {"title": "a", "theirs": 5}, "outer") == Outer(name="a")  # another's
    with pytest.raises(ConfigError, match=r"^outer\.ratee=0\.5: unknown key"):
        parse(Outer, {"ratee": 0.5, "title": "a"}, "outer")
    with pytest.raises(ConfigError, match=r"^outer\.inner\.depth=0: must be an integer >= 1"):
        parse(Outer, {"inner": {"depth": 0}, "title": "a"}, "outer")


def test_required_keys_and_rules_between_fields_name_their_key():
    with pytest.raises(ConfigError, match=r"^outer\.title=None: missing: a name"):
        parse(Outer, {}, "outer")
    with pytest.raises(ConfigError, match=r"^outer\.rate=1\.0: must be <= 0\.9 with async"):
        parse(Outer, {"rate": 1.0, "async": True, "title": "a"}, "outer")


@dataclass(frozen=True)
class Whole(Settings):
    seed: int = setting(42, Int(0))
    name: str = setting("run", Text(what="a name"), key="train.params.config.name")


def test_without_a_prefix_the_whole_config_is_read_its_own_keys_only():
    whole = OmegaConf.create({"seed": 7, "train": {"params": {"config": {"name": "b"}}}, "x": 1})
    assert parse(Whole, whole) == Whole(seed=7, name="b")  # other keys are not its business
    with pytest.raises(ConfigError, match=r"^train\.params\.config\.name='': must be a name"):
        parse(Whole, {"train": {"params": {"config": {"name": ""}}}})
