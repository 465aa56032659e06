"""The writing gateway: JSON is valid UTF-8 whatever the strings hold, text degrades to ASCII
marks, a failed write is exit 2 in one line, files are written whole and never through a link
or onto something that is not a regular file. Commands run as a user runs them (a child
process) where the real standard streams matter."""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from gpuenv.cli import main
from gpuenv.edges.output import encodable, write_file, write_tree
from gpuenv.errors import GpuenvError
from gpuenv.facts import to_dict
from gpuenv.render.jsontext import json_text
from tests.builders import dist, machine, torch_build

HOSTILE = "torch\u202egpt\udcff\x85\x1b[2J"


@pytest.fixture
def snap(tmp_path: Path) -> Path:
    """A snapshot on which the doctor finds an error (a CPU torch beside a usable GPU), with a
    hostile package name (a bidi override, a lone surrogate, a C1 control, an escape)."""
    snapshot = machine(
        gpus=["RTX 3090"],
        driver="535.183.01",
        frameworks=[torch_build("2.4.1+cpu", None)],
        dists=[dist("torch", "2.4.1+cpu"), dist(HOSTILE, "1.0")],
    )
    path = tmp_path / "snap.json"
    path.write_text(json_text(to_dict(snapshot)), encoding="utf-8")
    return path


def _gpuenv(
    *argv: str, env: dict[str, str] | None = None, **kwargs: object
) -> subprocess.CompletedProcess[bytes]:
    options: dict[str, object] = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, **kwargs}
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [sys.executable, "-m", "gpuenv", *argv],
        env={**os.environ, **(env or {})},
        timeout=120,
        check=False,
        **options,
    )


def test_json_escapes_what_utf8_or_a_terminal_cannot_take_and_means_the_same_string() -> None:
    text = json_text({"name": HOSTILE})
    raw = text.encode("utf-8")  # a lone surrogate would raise here
    assert "\\u202e" in text and "\\udcff" in text and "\\u0085" in text and "\\u001b" in text
    assert "\u202e" not in text and "\x1b" not in text
    assert json.loads(raw)["name"] == HOSTILE


@pytest.mark.parametrize(
    ("encoding", "expected"),
    [
        ("ascii", "+ ok >= 12.2 -> ... x"),
        ("utf-8", "✓ ok ≥ 12.2 → … ✗"),
        ("cp1252", "+ ok >= 12.2 -> ... x"),
    ],
)
def test_text_degrades_to_ascii_marks_where_the_encoding_lacks_them(
    encoding: str, expected: str
) -> None:
    assert encodable("✓ ok ≥ 12.2 → … ✗", encoding) == expected


def test_doctor_json_in_process_is_valid_utf8_with_hostile_names(
    snap: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["doctor", "--json", "--from", str(snap)]) == 1
    out = capsys.readouterr().out
    assert "\u202e" not in out and "\\u202e" in out
    names = [d["name"] for d in json.loads(out)["snapshot"]["python_env"]["distributions"]]
    assert HOSTILE in names


@pytest.mark.real
def test_an_ascii_terminal_gets_ascii_marks_not_an_internal_error(snap: Path) -> None:
    done = _gpuenv("doctor", "--from", str(snap), env={"PYTHONIOENCODING": "ascii"})
    out = done.stdout.decode("ascii")  # every byte is ASCII
    assert done.returncode == 1, done.stderr
    assert "+ ok" in out and "internal-error" not in done.stderr.decode()


@pytest.mark.real
def test_json_is_utf8_even_when_stdout_says_ascii(snap: Path) -> None:
    done = _gpuenv("doctor", "--json", "--from", str(snap), env={"PYTHONIOENCODING": "ascii"})
    assert done.returncode == 1
    assert json.loads(done.stdout.decode("utf-8"))["exit_code"] == 1


@pytest.mark.real
def test_undecodable_bytes_in_the_environment_give_valid_json() -> None:
    env = {**os.environ}
    env_bytes = {k.encode(): v.encode() for k, v in env.items()}
    env_bytes[b"CUDA_VISIBLE_DEVICES"] = b"\xff\xfe"
    done = subprocess.run(
        [sys.executable, "-m", "gpuenv", "snapshot", "--json", "--timeout", "5"],
        capture_output=True,
        env=env_bytes,  # type: ignore[arg-type]
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout.decode("utf-8"))
    assert document["host"]["env"]["CUDA_VISIBLE_DEVICES"] == "\udcff\udcfe"


@pytest.mark.real
def test_a_closed_stdout_is_exit_2_with_one_line(snap: Path) -> None:
    done = _gpuenv("doctor", "--from", str(snap), stdout=None, preexec_fn=lambda: os.close(1))
    err = done.stderr.decode()
    assert done.returncode == 2
    assert "standard output is closed" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.real
@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize(
    "argv",
    [
        ["plan", "torch", "--json", "--gpu", "RTX 3090", "--driver", "535.183.01"],
        ["plan", "torch", "--gpu", "RTX 3090", "--driver", "535.183.01"],
        ["doctor", "--json", "--from", "{snap}"],
        ["kb", "show", "gpu", "--json"],
    ],
    ids=" ".join,
)
def test_a_full_disk_is_exit_2_with_the_reason(argv: list[str], snap: Path) -> None:
    with open("/dev/full", "wb") as full:
        done = _gpuenv(*[a.replace("{snap}", str(snap)) for a in argv], stdout=full)
    err = done.stderr.decode()
    assert done.returncode == 2, err
    assert "No space left on device" in err and "Traceback" not in err


@pytest.mark.real
def test_a_reader_that_goes_away_is_not_an_error(snap: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpuenv", "kb", "show", "gpu"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(10)
    proc.stdout.close()  # `| head -c 10`
    err = proc.stderr.read().decode()
    assert proc.wait(60) == 0 and "Traceback" not in err and err == ""


# -- files --------------------------------------------------------------------------------------


def test_write_file_is_atomic_and_keeps_the_mode(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    path.write_text("old")
    path.chmod(0o600)
    write_file(path, "new")
    assert path.read_text() == "new" and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


@pytest.fixture
def umask_077() -> object:
    old = os.umask(0o077)
    yield
    os.umask(old)


@pytest.mark.skipif(os.name != "posix", reason="POSIX modes")
@pytest.mark.usefixtures("umask_077")
def test_a_new_file_gets_the_umask_like_any_program_writes(tmp_path: Path) -> None:
    """umask 077 (a private home, a shared machine): a snapshot naming the host is not left
    readable by everyone."""
    write_file(tmp_path / "snap.json", "{}")
    write_file(tmp_path / "setup.sh", "#!/bin/sh\n", executable=True)
    assert stat.S_IMODE((tmp_path / "snap.json").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "setup.sh").stat().st_mode) == 0o700


@pytest.mark.skipif(os.name != "posix", reason="POSIX modes")
def test_making_an_existing_file_executable_adds_run_bits_only_where_it_can_be_read(
    tmp_path: Path,
) -> None:
    path = tmp_path / "setup.sh"
    path.write_text("old")
    path.chmod(0o640)
    write_file(path, "#!/bin/sh\n", executable=True)
    assert stat.S_IMODE(path.stat().st_mode) == 0o750


def test_a_name_as_long_as_the_system_allows_can_be_written(tmp_path: Path) -> None:
    """The temporary file beside the target must not need a longer name than the target."""
    path = tmp_path / ("x" * 250 + ".json")
    write_file(path, "{}")
    assert path.read_text() == "{}" and len(list(tmp_path.iterdir())) == 1


def test_ctrl_c_while_writing_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*_args: object) -> None:
        raise KeyboardInterrupt

    (tmp_path / "out.json").write_text("old")
    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_file(tmp_path / "out.json", "new")
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]
    assert (tmp_path / "out.json").read_text() == "old"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_snapshot_o_refuses_a_fifo_and_leaves_it_there(
    tmp_path: Path, snap: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert main(["snapshot", "--from", str(snap), "-o", str(fifo)]) == 2
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert "FIFO" in capsys.readouterr().err


def test_snapshot_o_refuses_a_symlink_and_its_target_is_untouched(
    tmp_path: Path, snap: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = tmp_path / "precious.txt"
    outside.write_text("keep me")
    link = tmp_path / "snap-out.json"
    link.symlink_to(outside)
    assert main(["snapshot", "--from", str(snap), "-o", str(link)]) == 2
    assert link.is_symlink() and outside.read_text() == "keep me"
    assert "symbolic link" in capsys.readouterr().err


def test_snapshot_o_refuses_a_device(snap: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["snapshot", "--from", str(snap), "-o", "/dev/null"]) == 2
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert "character device" in capsys.readouterr().err


def test_plan_o_never_writes_through_a_link_inside_the_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me")
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "requirements.txt").symlink_to(outside)
    argv = ["plan", "torch", "--gpu", "RTX 3090", "--driver", "535.183.01", "-o", str(folder)]
    assert main(argv) == 2
    assert outside.read_text() == "keep me"
    assert "symbolic link" in capsys.readouterr().err


def test_write_tree_refuses_names_that_lead_out_of_the_folder(tmp_path: Path) -> None:
    for name in ("../escape.txt", "/etc/passwd", "a/../../b"):
        with pytest.raises(GpuenvError):
            write_tree(tmp_path / "out", {name: "x"})
    assert not (tmp_path / "escape.txt").exists()


@pytest.mark.parametrize(
    "name", ["C:escape.txt", "sub/C:x", "notes.txt:stream", "nul", "NUL.txt", "com1", "run.sh."]
)
def test_write_tree_refuses_names_that_mean_something_else_on_windows(
    tmp_path: Path, name: str
) -> None:
    """A drive-relative part would leave the folder on Windows; a device name writes to it."""
    with pytest.raises(GpuenvError, match="not a file name inside"):
        write_tree(tmp_path / "out", {name: "x"})
    assert not (tmp_path / "out").exists()


def test_write_tree_writes_nothing_when_a_later_file_is_refused(tmp_path: Path) -> None:
    """plan -o DIR writes requirements.txt and a Dockerfile: a link at the Dockerfile must not
    leave a requirements.txt behind from a half-done write."""
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me")
    root = tmp_path / "out"
    root.mkdir()
    (root / "Dockerfile").symlink_to(outside)
    with pytest.raises(GpuenvError, match="symbolic link"):
        write_tree(root, {"requirements.txt": "torch\n", "sub/x.txt": "x", "Dockerfile": "FROM x"})
    assert sorted(p.name for p in root.iterdir()) == ["Dockerfile"]
    assert outside.read_text() == "keep me"


def test_write_tree_creates_nested_folders(tmp_path: Path) -> None:
    written = write_tree(tmp_path / "out", {"a/b/c.txt": "x", "a/d.txt": "y"})
    assert [p.read_text() for p in written] == ["x", "y"]


def test_write_tree_refuses_a_linked_sub_folder(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    root = tmp_path / "out"
    root.mkdir()
    (root / "sub").symlink_to(elsewhere)
    with pytest.raises(GpuenvError, match="symbolic link"):
        write_tree(root, {"sub/file.txt": "x"})
    assert list(elsewhere.iterdir()) == []


def test_the_folder_given_may_itself_be_a_link(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "alias").symlink_to(real)
    written = write_tree(tmp_path / "alias", {"a.txt": "x", "run.sh": "#!/bin/sh\n"}, ["run.sh"])
    assert (real / "a.txt").read_text() == "x" and len(written) == 2
    assert os.access(real / "run.sh", os.X_OK)


@pytest.mark.real
@pytest.mark.skipif(os.name != "posix", reason="O_NONBLOCK on a pipe")
def test_a_non_blocking_stdout_gets_the_whole_output() -> None:
    """A pipe another program set O_NONBLOCK on takes 64 KiB, then refuses more until read:
    the rest must wait for the reader, not vanish behind exit 0."""
    import fcntl
    import time

    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETFL, fcntl.fcntl(write_end, fcntl.F_GETFL) | os.O_NONBLOCK)
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpuenv", "kb", "show", "wheels", "--json"],
        stdout=write_end,
        stderr=subprocess.PIPE,
    )
    os.close(write_end)
    time.sleep(1.0)  # a slow reader: the pipe fills up meanwhile
    with os.fdopen(read_end, "rb") as reader:
        data = reader.read()
    assert proc.wait(60) == 0
    assert json.loads(data)["rows"]


class _Congested(io.RawIOBase):
    """A non-blocking pipe with a slow reader: every other write is refused, the others take
    at most 7 bytes."""

    def __init__(self) -> None:
        self.received = bytearray()
        self.calls = 0

    def writable(self) -> bool:
        return True

    def write(self, data: object) -> int | None:
        self.calls += 1
        if self.calls % 2:
            return None  # would block
        chunk = bytes(memoryview(data))[:7]  # type: ignore[arg-type]
        self.received += chunk
        return len(chunk)


def test_progress_on_a_congested_non_blocking_stderr_is_not_lost(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from gpuenv.edges.output import relay, say

    raw = _Congested()
    monkeypatch.setattr(sys, "stderr", io.TextIOWrapper(io.BufferedWriter(raw, 16), "utf-8"))
    say("gpuenv: " + "x" * 100)
    relay("Collecting torch\n" * 20)
    assert raw.received.decode() == "gpuenv: " + "x" * 100 + "\n" + "Collecting torch\n" * 20
