"""engine="stream" on Parquet files sorted by user (receval.engines.stream._sorted_blocks): the
files are read in order, in batches, truth and recs in lock-step by user, without the
partition pass; the Result equals the local engine's bit for bit, and a file out of order
falls back to the partition pass (``sorted_by_user="auto"``) or raises (``True``).

The data are the shard tests' (tests/helpers/shard.py: ties, users in truth only and in recs
only, graded relevance, train, an item table), sorted by user with each user's rows kept in
their input order (recs rows are shuffled there: files sorted by user, not within a user)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import receval
from helpers.shard import DATA, assert_same, groups
from receval import InputError
from receval.cli import app
from receval.data.io import Inputs
from receval.engines import stream

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture
def paths(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """Records the blocks of the sorted path and each partition pass (engine='stream')."""
    seen: dict[str, list[Any]] = {"sorted": [], "partition": []}
    sorted_blocks = stream._sorted_blocks
    sink = pl.LazyFrame.sink_parquet

    def spy_sorted(*args: Any, **kwargs: Any) -> Any:
        for t, r in sorted_blocks(*args, **kwargs):
            seen["sorted"].append((t.height, r.height))
            yield t, r

    def spy_sink(self: pl.LazyFrame, *args: Any, **kwargs: Any) -> Any:
        seen["partition"].append(1)
        return sink(self, *args, **kwargs)

    monkeypatch.setattr(stream, "_sorted_blocks", spy_sorted)
    monkeypatch.setattr(pl.LazyFrame, "sink_parquet", spy_sink)
    return seen


def by_user(frame: pl.DataFrame, user: str = "user") -> pl.DataFrame:
    """Sorted by user, each user's rows in their input order."""
    return frame.sort(user, maintain_order=True)


def write(frame: pl.DataFrame, path: Path, row_group: int) -> Path:
    frame.write_parquet(path, row_group_size=row_group)
    return path


@pytest.mark.parametrize("ids", ["int", "str"])
@pytest.mark.parametrize("ties", ["expected", "first"])
@pytest.mark.parametrize("block_memory", ["1KiB", "3KiB", "20KiB"])
def test_sorted_files_skip_the_partition_pass(
    tmp_path: Path, paths: dict[str, list[Any]], block_memory: str, ties: str, ids: str
) -> None:
    """Every metric family, several blocks (1 KiB: about 5 rows a block), row groups of 7 and
    11 rows: the sorted path alone, and evaluate's Result."""
    for name, (truth, recs, metrics, options) in groups(DATA[ids]).items():
        if name in ("classification", "rating") and ties != "expected":
            continue
        given = {**options, "rating_range": (1.0, 5.0)} if name == "rating" else options
        t_path = write(by_user(truth), tmp_path / f"{name}_t.parquet", 7)
        r_path = write(by_user(recs), tmp_path / f"{name}_r.parquet", 11)
        local = receval.evaluate(truth, recs, metrics, ties=ties, **given)
        paths["sorted"].clear()
        paths["partition"].clear()
        got = receval.evaluate(
            t_path, r_path, metrics, ties=ties, engine="stream", block_memory=block_memory,
            **given,
        )  # fmt: skip
        try:
            assert_same(got, local)
        except AssertionError as exc:
            raise AssertionError(f"group {name}: {exc}") from exc
        assert paths["partition"] == [], name
        assert len(paths["sorted"]) > 1, name
        t_rows = sum(t for t, _ in paths["sorted"])
        r_rows = sum(r for _, r in paths["sorted"])
        assert (t_rows, r_rows) == (truth.height, recs.height), name


def test_blocks_hold_whole_users_and_stay_bounded(tmp_path: Path) -> None:
    """_sorted_blocks: every user's rows of both sides in one block, each side's block at most
    its buffer (2 x half rows) plus one user's rows, all rows once, in file order."""
    truth, recs, _, _ = groups(DATA["int"])["ranking"]
    truth, recs = by_user(truth), by_user(recs)
    biggest = max(
        int(f.group_by("user").len()["len"].max())  # type: ignore[arg-type]
        for f in (truth, recs)
    )
    tmp = tmp_path
    for half in (1, 2, 5, 17, 1000):
        write(truth, tmp / "t.parquet", 3)
        write(recs, tmp / "r.parquet", 4)
        read = Inputs.of(None, None, "user", "item")
        sides = stream._sorted_sides(
            tmp / "t.parquet", tmp / "r.parquet", read, truth.schema, recs.schema, "auto",
            True, half,
        )  # fmt: skip
        assert sides is not None
        blocks = list(stream._sorted_blocks(*sides, half))
        owner: dict[Any, int] = {}
        for b, (t, r) in enumerate(blocks):
            assert t.height <= 2 * half + biggest and r.height <= 2 * half + biggest
            for u in pl.concat([t["user"], r["user"]]).unique().to_list():
                assert owner.setdefault(u, b) == b, f"user {u} in blocks {owner[u]} and {b}"
        got_t = pl.concat([t for t, _ in blocks])
        got_r = pl.concat([r for _, r in blocks])
        assert got_t.equals(truth) and got_r.equals(recs)
        if half < 100:
            assert len(blocks) > 3


def test_sorting_columns_metadata_and_missing_statistics(
    tmp_path: Path, paths: dict[str, list[Any]]
) -> None:
    """A footer with sorting_columns (and no statistics) is taken as sorted; a footer without
    statistics nor sorting_columns is not guessed ('auto': partition pass), but True reads it
    in order."""
    truth, recs, metrics, _ = groups(DATA["str"])["ranking"]
    truth, recs = by_user(truth), by_user(recs)
    local = receval.evaluate(truth, recs, metrics)
    declared = [pq.SortingColumn(0)]
    for frame, name in ((truth, "t"), (recs, "r")):
        table = frame.to_arrow()
        pq.write_table(table, tmp_path / f"{name}_declared.parquet", row_group_size=9,
                       sorting_columns=declared, write_statistics=False)  # fmt: skip
        pq.write_table(table, tmp_path / f"{name}_bare.parquet", row_group_size=9,
                       write_statistics=False)  # fmt: skip
    assert stream._metadata_sorted(tmp_path / "r_declared.parquet", "user")
    assert not stream._metadata_sorted(tmp_path / "r_bare.parquet", "user")
    for kind, sorted_by_user, expect_sorted in (
        ("declared", "auto", True), ("bare", "auto", False), ("bare", True, True),
        ("declared", False, False),
    ):  # fmt: skip
        paths["sorted"].clear()
        paths["partition"].clear()
        got = receval.evaluate(
            tmp_path / f"t_{kind}.parquet", tmp_path / f"r_{kind}.parquet", metrics,
            engine="stream", block_memory="2KiB", sorted_by_user=sorted_by_user,
        )  # fmt: skip
        assert_same(got, local)
        assert bool(paths["sorted"]) is expect_sorted, (kind, sorted_by_user)
        assert bool(paths["partition"]) is not expect_sorted, (kind, sorted_by_user)


def test_truth_sorted_recs_not(tmp_path: Path, paths: dict[str, list[Any]]) -> None:
    """Recs in input order (not sorted): 'auto' takes the partition pass from the footer's
    statistics; True raises naming the first row out of order."""
    truth, recs, metrics, _ = groups(DATA["int"])["ranking"]
    t_path = write(by_user(truth), tmp_path / "t.parquet", 7)
    r_path = write(recs, tmp_path / "r.parquet", 11)
    got = receval.evaluate(t_path, r_path, metrics, engine="stream", block_memory="2KiB")
    assert_same(got, receval.evaluate(truth, recs, metrics))
    assert paths["sorted"] == [] and paths["partition"]
    users = recs["user"]
    at = int((users < users.shift(1)).arg_true()[0])
    with pytest.raises(InputError) as info:
        receval.evaluate(t_path, r_path, metrics, engine="stream", sorted_by_user=True)
    msg = str(info.value)
    assert msg.startswith("sorted_by_user=True: recs is not sorted by user: ")
    assert f"row {at} has user {users[at]!r}, after user {users[at - 1]!r}" in msg


@pytest.mark.parametrize("block_memory", ["1KiB", "1GiB"])
def test_a_file_unsorted_in_its_last_row_group(
    tmp_path: Path, paths: dict[str, list[Any]], block_memory: str
) -> None:
    """Row groups whose ranges follow one another, the last one out of order inside: 'auto'
    starts in order, meets the row and starts again with the partition pass (the Result is
    evaluate's); True raises naming the row."""
    truth, recs, metrics, _ = groups(DATA["int"])["ranking"]
    truth, recs = by_user(truth), by_user(recs)
    last_users = recs["user"].unique().sort().tail(3)
    n = recs.filter(pl.col("user").is_in(last_users.implode())).height  # their rows: the tail
    shuffled = pl.concat([recs.head(recs.height - n), recs.tail(n).reverse()])
    assert not shuffled["user"].is_sorted()
    t_path = write(truth, tmp_path / "t.parquet", 7)
    r_path = tmp_path / "r.parquet"
    table = shuffled.to_arrow()
    with pq.ParquetWriter(r_path, table.schema) as writer:  # the last users' rows: one row group
        writer.write_table(table.slice(0, table.num_rows - n), row_group_size=10)
        writer.write_table(table.slice(table.num_rows - n), row_group_size=n)
    assert stream._metadata_sorted(r_path, "user")
    got = receval.evaluate(t_path, r_path, metrics, engine="stream", block_memory=block_memory)
    assert_same(got, receval.evaluate(truth, shuffled, metrics))
    if block_memory == "1KiB":  # several blocks: the sorted path ran, then the partition pass
        assert paths["sorted"] and paths["partition"]
    users = shuffled["user"]
    at = int((users < users.shift(1)).arg_true()[0])
    assert at >= recs.height - n
    with pytest.raises(InputError, match=rf"recs is not sorted by user: row {at} has user"):
        receval.evaluate(
            t_path, r_path, metrics, engine="stream", block_memory=block_memory,
            sorted_by_user=True,
        )  # fmt: skip


def test_batches_out_of_order_across_row_groups(tmp_path: Path) -> None:
    """A batch that starts below the previous batch's last user (each batch sorted on its
    own) is out of order too."""
    truth, recs, metrics, _ = groups(DATA["int"])["ranking"]
    truth, recs = by_user(truth), by_user(recs)
    half = recs.height // 2
    swapped = pl.concat([recs.slice(half), recs.slice(0, half)])
    t_path = write(truth, tmp_path / "t.parquet", 7)
    r_path = write(swapped, tmp_path / "r.parquet", half)
    with pytest.raises(InputError, match=rf"recs is not sorted by user: row {recs.height - half} "):
        receval.evaluate(t_path, r_path, metrics, engine="stream", sorted_by_user=True)
    got = receval.evaluate(t_path, r_path, metrics, engine="stream", block_memory="1KiB")
    assert_same(got, receval.evaluate(truth, swapped, metrics))


def test_id_types_and_renamed_columns(tmp_path: Path, paths: dict[str, list[Any]]) -> None:
    """Integer files under id_type='str' stay in the sorted path (decimal text of distinct
    integers is distinct); text ids sorted as text under id_type='int' are out of integer
    order ('10' < '9') and fall back; a renamed user column is read under its own name."""
    truth, recs, metrics, _ = groups(DATA["int"])["ranking"]
    truth, recs = by_user(truth), by_user(recs)
    t_path = write(truth, tmp_path / "t.parquet", 7)
    r_path = write(recs.rename({"user": "uid"}), tmp_path / "r.parquet", 11)
    cols = {"recs": {"user": "uid"}}
    for id_type in ("str", "auto"):
        paths["sorted"].clear()
        paths["partition"].clear()
        got = receval.evaluate(t_path, r_path, metrics, engine="stream", block_memory="1KiB",
                               id_type=id_type, columns=cols)  # fmt: skip
        want = receval.evaluate(truth, recs, metrics, id_type=id_type)
        assert_same(got, want)
        assert paths["sorted"] and not paths["partition"]
        hashed = receval.evaluate(t_path, r_path, metrics, engine="stream", block_memory="1KiB",
                                  id_type=id_type, columns=cols, sorted_by_user=False)  # fmt: skip
        assert_same(hashed, want)
    as_text = [f.with_columns(pl.col("user").cast(pl.String)) for f in (truth, recs)]
    t_text, r_text = (by_user(f) for f in as_text)
    assert t_text["user"].to_list() != sorted(t_text["user"].to_list(), key=int)
    write(t_text, tmp_path / "ts.parquet", 7)
    write(r_text, tmp_path / "rs.parquet", 11)
    paths["sorted"].clear()
    paths["partition"].clear()
    got = receval.evaluate(tmp_path / "ts.parquet", tmp_path / "rs.parquet", metrics,
                           engine="stream", block_memory="1KiB", id_type="int")  # fmt: skip
    assert_same(got, receval.evaluate(truth, recs, metrics))
    assert paths["partition"]
    with pytest.raises(InputError, match="sorted_by_user=True: truth is not sorted by user"):
        receval.evaluate(tmp_path / "ts.parquet", tmp_path / "rs.parquet", metrics,
                         engine="stream", id_type="int", sorted_by_user=True)  # fmt: skip


def test_null_users_raise_the_usual_error(tmp_path: Path) -> None:
    """A null user id leaves the sorted path; the partition pass raises its usual error."""
    truth, recs, metrics, _ = groups(DATA["int"])["ranking"]
    truth, recs = by_user(truth), by_user(recs)
    nulled = recs.with_columns(
        pl.when(pl.int_range(pl.len()) == 3).then(None).otherwise(pl.col("user")).alias("user")
    )
    t_path = write(truth, tmp_path / "t.parquet", 7)
    r_path = write(nulled, tmp_path / "r.parquet", 11)
    with pytest.raises(InputError, match="recs has 1 null") as want:
        receval.evaluate(t_path, r_path, metrics, engine="stream", block_memory="1KiB",
                         sorted_by_user=False)  # fmt: skip
    for sorted_by_user in ("auto", True):
        with pytest.raises(InputError) as got:
            receval.evaluate(t_path, r_path, metrics, engine="stream", block_memory="1KiB",
                             sorted_by_user=sorted_by_user)  # fmt: skip
        assert str(got.value) == str(want.value)


def test_csv_keeps_the_partition_pass_and_bad_options(tmp_path: Path) -> None:
    truth, recs, metrics, _ = groups(DATA["int"])["ranking"]
    by_user(truth).write_csv(tmp_path / "t.csv")
    by_user(recs).write_csv(tmp_path / "r.csv")
    local = receval.evaluate(tmp_path / "t.csv", tmp_path / "r.csv", metrics)
    got = receval.evaluate(tmp_path / "t.csv", tmp_path / "r.csv", metrics, engine="stream",
                           block_memory="1KiB")  # fmt: skip
    assert_same(got, local)
    with pytest.raises(InputError, match="sorted_by_user=True reads Parquet files in order; "
                       "truth is csv"):  # fmt: skip
        receval.evaluate(tmp_path / "t.csv", tmp_path / "r.csv", metrics, engine="stream",
                         sorted_by_user=True)  # fmt: skip
    with pytest.raises(InputError, match="sorted_by_user=True applies to engine='stream'"):
        receval.evaluate(truth, recs, metrics, sorted_by_user=True)
    with pytest.raises(InputError, match="sorted_by_user must be 'auto', True or False; got 1"):
        receval.evaluate(truth, recs, metrics, engine="stream", sorted_by_user=1)  # type: ignore[arg-type]
    pa_table = pa.table({"user": [1.5], "item": [1]})
    pq.write_table(pa_table, tmp_path / "f.parquet")
    with pytest.raises(InputError, match="have no common order"):
        receval.evaluate(tmp_path / "f.parquet", tmp_path / "f.parquet", metrics,
                         engine="stream", sorted_by_user=True)  # fmt: skip


def test_cli_flag_and_config_key(tmp_path: Path, paths: dict[str, list[Any]]) -> None:
    truth, recs, metrics, _ = groups(DATA["str"])["ranking"]
    write(by_user(truth), tmp_path / "t.parquet", 7)
    write(recs, tmp_path / "r.parquet", 11)  # not sorted
    args = ["evaluate", "--truth", str(tmp_path / "t.parquet"), "--recs",
            str(tmp_path / "r.parquet"), "--format", "json", "-m", metrics[0],
            "--engine", "stream", "--block-memory", "2048"]  # fmt: skip
    runner = CliRunner()
    fine = runner.invoke(app, [*args, "--sorted-by-user", "auto"])
    assert fine.exit_code == 0, fine.output
    assert paths["partition"] and not paths["sorted"]
    failed = runner.invoke(app, [*args, "--sorted-by-user", "true"])
    assert failed.exit_code != 0
    assert "recs is not sorted by user: row" in failed.output
    (tmp_path / "c.toml").write_text("sorted_by_user = true\n")
    failed = runner.invoke(app, [*args, "--config", str(tmp_path / "c.toml")])
    assert failed.exit_code != 0 and "recs is not sorted by user: row" in failed.output
    (tmp_path / "c.toml").write_text('sorted_by_user = "yes"\n')
    bad = runner.invoke(app, [*args, "--config", str(tmp_path / "c.toml")])
    assert bad.exit_code != 0 and 'must be true, false or "auto"' in bad.output
