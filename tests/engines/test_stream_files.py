"""``engine="stream"`` on Parquet files that cannot be read (0 bytes, truncated, garbage) or
lack a column: an InputError naming the file, not a Polars error (issue 29, item 8)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

import receval
from receval import InputError
from receval.cli import app

TRUTH = pl.DataFrame({"user": [1, 1, 2], "item": [1, 2, 3]})
RECS = pl.DataFrame({"user": [1, 2, 2], "item": [1, 3, 4], "score": [0.9, 0.8, 0.1]})


def _bad(tmp_path: Path, how: str) -> Path:
    path = tmp_path / f"{how}.parquet"
    if how == "empty":
        path.write_bytes(b"")
    elif how == "garbage":
        path.write_bytes(b"this is not parquet\n" * 50)
    elif how == "truncated":
        RECS.write_parquet(path)
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    elif how == "corrupt":  # the footer intact, the data pages overwritten
        RECS.write_parquet(path, compression="uncompressed", statistics=False)
        data = bytearray(path.read_bytes())
        data[4:40] = b"\xff" * 36
        path.write_bytes(bytes(data))
    elif how == "no_item":
        RECS.drop("item").write_parquet(path)
    elif how == "magic_only":
        path.write_bytes(b"PAR1")
    return path


@pytest.mark.parametrize("sorted_by_user", ["auto", True, False])
@pytest.mark.parametrize(
    "how", ["empty", "garbage", "truncated", "corrupt", "no_item", "magic_only"]
)
@pytest.mark.parametrize("side", ["truth", "recs"])
def test_unreadable_parquet_raises_input_error(
    tmp_path: Path, how: str, side: str, sorted_by_user: object
) -> None:
    good_t, good_r = tmp_path / "t.parquet", tmp_path / "r.parquet"
    TRUTH.sort("user").write_parquet(good_t)
    RECS.sort("user").write_parquet(good_r)
    bad = _bad(tmp_path, how)
    truth, recs = (bad, good_r) if side == "truth" else (good_t, bad)
    with pytest.raises(InputError, match=f"{side}.*{bad.name}|{bad.name}.*{side}") as info:
        receval.evaluate(
            truth,
            recs,
            "ndcg@2",
            engine="stream",
            sorted_by_user=sorted_by_user,  # type: ignore[arg-type]
        )
    if how == "no_item":
        assert "'item'" in str(info.value)


def test_cli_calls_an_unreadable_file_an_input_error(tmp_path: Path) -> None:
    good = tmp_path / "t.parquet"
    TRUTH.write_parquet(good)
    bad = _bad(tmp_path, "truncated")
    args = ["evaluate", "--truth", str(good), "--recs", str(bad), "-m", "ndcg@2"]
    result = CliRunner().invoke(app, [*args, "--engine", "stream"])
    assert result.exit_code == 2, result.output
    assert "bug" not in result.output.lower()
    assert bad.name in result.output
