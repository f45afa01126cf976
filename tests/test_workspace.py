"""The task agent's workspace: safe unpacking and read-only tools, on real files in tmp_path."""

from __future__ import annotations

import io
import os
import tarfile
import time
import zipfile
from pathlib import Path

import pytest

from zhixing.core.errors import AccessError, NotFoundError, ZhixingError
from zhixing.core.task import GrepHit, Workspace, open_workspace, unpack_archive
from zhixing.core.task.globs import MAX_GLOB_CHARS, glob_matcher

SAMPLE = Path(__file__).resolve().parents[1] / "samples" / "springboot-shop"
JAVA = "src/main/java/com/example/shop"

GOOD_FILES = {
    "README.md": b"# demo\n",
    "src/App.java": b"class App {}\n",
    "src/util/U.java": b"x\n",
}


def make_zip(path: Path, files: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return path


def make_tar(path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]]) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tf.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def tar_file(name: str, data: bytes) -> tuple[tarfile.TarInfo, bytes]:
    return tarfile.TarInfo(name), data


def tar_link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info, None


def leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir()) if parent.exists() else []


# --- unpacking ---------------------------------------------------------------------------------


def test_unpack_archive_extracts_a_good_zip(tmp_path: Path) -> None:
    ws = unpack_archive(make_zip(tmp_path / "p.zip", GOOD_FILES), tmp_path / "out" / "ws")
    assert ws.root == (tmp_path / "out" / "ws").resolve()
    assert ws.list_files() == sorted(GOOD_FILES)
    assert (ws.root / "src/App.java").read_bytes() == b"class App {}\n"
    assert leftovers(tmp_path / "out") == ["ws"]  # no temp folder left beside it


def test_unpack_archive_extracts_a_good_tar_gz(tmp_path: Path) -> None:
    archive = make_tar(tmp_path / "p.tar.gz", [tar_file(n, d) for n, d in GOOD_FILES.items()])
    ws = unpack_archive(archive, tmp_path / "ws")
    assert ws.list_files() == sorted(GOOD_FILES)
    assert ws.read_file("src/util/U.java") == "1| x"


@pytest.mark.parametrize("name", ["../../etc/passwd", "src/../../evil.txt", "/etc/passwd"])
def test_unpack_archive_refuses_zip_entries_that_leave_the_folder(
    tmp_path: Path, name: str
) -> None:
    archive = make_zip(tmp_path / "bad.zip", {"ok.txt": b"fine", name: b"root::0:0"})
    with pytest.raises(AccessError, match="points outside the archive folder") as err:
        unpack_archive(archive, tmp_path / "out" / "ws")
    assert repr(name) in str(err.value)
    assert not (tmp_path / "out").exists()
    assert leftovers(tmp_path) == ["bad.zip"]


@pytest.mark.parametrize("name", ["../../etc/passwd", "/etc/passwd", "a/./../../b"])
def test_unpack_archive_refuses_tar_entries_that_leave_the_folder(
    tmp_path: Path, name: str
) -> None:
    archive = make_tar(tmp_path / "bad.tgz", [tar_file("ok.txt", b"fine"), tar_file(name, b"x")])
    with pytest.raises(AccessError, match="points outside the archive folder"):
        unpack_archive(archive, tmp_path / "ws")
    assert leftovers(tmp_path) == ["bad.tgz"]


def test_unpack_archive_refuses_a_tar_symlink_pointing_outside(tmp_path: Path) -> None:
    archive = make_tar(
        tmp_path / "link.tar.gz", [tar_file("a.txt", b"a"), tar_link("passwd", "/etc/passwd")]
    )
    with pytest.raises(AccessError, match="'passwd' is a link to '/etc/passwd'"):
        unpack_archive(archive, tmp_path / "ws")
    assert leftovers(tmp_path) == ["link.tar.gz"]


def test_unpack_archive_refuses_tar_hardlinks_and_devices(tmp_path: Path) -> None:
    hard = make_tar(tmp_path / "hard.tar.gz", [tar_link("h", "../../etc/shadow", tarfile.LNKTYPE)])
    with pytest.raises(AccessError, match="is a link"):
        unpack_archive(hard, tmp_path / "ws")
    dev = tarfile.TarInfo("null")
    dev.type = tarfile.CHRTYPE
    device = make_tar(tmp_path / "dev.tar.gz", [(dev, None)])
    with pytest.raises(AccessError, match="device or special file"):
        unpack_archive(device, tmp_path / "ws")
    assert not (tmp_path / "ws").exists()


def test_unpack_archive_refuses_a_zip_symlink(tmp_path: Path) -> None:
    info = zipfile.ZipInfo("evil")
    info.external_attr = 0o120777 << 16  # the Unix mode of a symbolic link
    with zipfile.ZipFile(tmp_path / "s.zip", "w") as zf:
        zf.writestr(info, "/etc/passwd")
    with pytest.raises(AccessError, match="'evil' is a symbolic link"):
        unpack_archive(tmp_path / "s.zip", tmp_path / "ws")


def test_unpack_archive_refuses_too_many_entries(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "many.zip", {f"f{i}.txt": b"x" for i in range(11)})
    with pytest.raises(AccessError, match="more than 10 entries"):
        unpack_archive(archive, tmp_path / "ws", max_entries=10)
    assert leftovers(tmp_path) == ["many.zip"]


def test_unpack_archive_refuses_a_total_size_over_the_cap(tmp_path: Path) -> None:
    # Zeros compress to almost nothing: the declared size is what counts, not the archive size.
    archive = make_zip(tmp_path / "bomb.zip", {"a.bin": b"\0" * 600, "b.bin": b"\0" * 600})
    assert archive.stat().st_size < 1000
    with pytest.raises(AccessError, match="unpacks to more than 1000 bytes"):
        unpack_archive(archive, tmp_path / "ws", max_bytes=1000)
    tar = make_tar(tmp_path / "bomb.tar.gz", [tar_file("big", b"\0" * 2000)])
    with pytest.raises(AccessError, match="unpacks to more than"):
        unpack_archive(tar, tmp_path / "ws", max_bytes=1000)
    assert leftovers(tmp_path) == ["bomb.tar.gz", "bomb.zip"]


def test_unpack_archive_refuses_unknown_types_and_non_empty_destinations(tmp_path: Path) -> None:
    (tmp_path / "p.rar").write_bytes(b"Rar!")
    with pytest.raises(AccessError, match="not a supported archive"):
        unpack_archive(tmp_path / "p.rar", tmp_path / "ws")
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "keep.txt").write_text("mine")
    with pytest.raises(AccessError, match="not empty"):
        unpack_archive(make_zip(tmp_path / "p.zip", GOOD_FILES), tmp_path / "ws")
    assert leftovers(tmp_path / "ws") == ["keep.txt"]


def test_unpack_archive_turns_a_corrupt_archive_into_a_readable_error(tmp_path: Path) -> None:
    (tmp_path / "broken.zip").write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(AccessError, match="broken.zip could not be unpacked"):
        unpack_archive(tmp_path / "broken.zip", tmp_path / "ws")
    assert leftovers(tmp_path) == ["broken.zip"]


def test_open_workspace_uses_a_folder_as_is_and_unpacks_an_archive_per_run(tmp_path: Path) -> None:
    assert open_workspace(SAMPLE, tmp_path / "runs").root == SAMPLE.resolve()
    assert not (tmp_path / "runs").exists()
    archive = make_zip(tmp_path / "p.zip", GOOD_FILES)
    first = open_workspace(archive, tmp_path / "runs")
    second = open_workspace(archive, tmp_path / "runs")
    assert first.root != second.root
    assert first.root.is_relative_to((tmp_path / "runs").resolve())
    assert first.list_files() == second.list_files() == sorted(GOOD_FILES)
    with pytest.raises(NotFoundError, match="does not exist"):
        open_workspace(tmp_path / "missing.zip", tmp_path / "runs")


# --- read_file ---------------------------------------------------------------------------------


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    (tmp_path / "secret.txt").write_text("outside\n")
    return Workspace.from_dir(root)


def test_read_file_numbers_lines_and_honours_ranges(ws: Workspace) -> None:
    assert ws.read_file("src/a.txt").splitlines()[0] == "1| line 1"
    assert ws.read_file("src/a.txt", start=3, end=5) == "3| line 3\n4| line 4\n5| line 5"
    assert ws.read_file("src/a.txt", start=9) == "9| line 9\n10| line 10"
    assert ws.read_file("src/a.txt", start=10, end=99) == "10| line 10"


def test_read_file_rejects_bad_ranges_readably(ws: Workspace) -> None:
    with pytest.raises(ZhixingError, match="has only 10 lines"):
        ws.read_file("src/a.txt", start=11)
    with pytest.raises(ZhixingError, match="invalid"):
        ws.read_file("src/a.txt", start=5, end=4)


def test_read_file_truncates_at_max_bytes_and_says_where(ws: Workspace) -> None:
    text = ws.read_file("src/a.txt", max_bytes=30)
    assert text.splitlines()[:3] == ["1| line 1", "2| line 2", "3| line 3"]
    assert text.endswith("[truncated at 30 bytes; read on from line 4]")


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("../secret.txt", "climbs out"),
        ("src/../../secret.txt", "climbs out"),
        ("/etc/passwd", "absolute path"),
    ],
)
def test_read_file_refuses_paths_outside_the_root(ws: Workspace, path: str, message: str) -> None:
    with pytest.raises(AccessError, match=message):
        ws.read_file(path)


def test_read_file_refuses_a_symlink_that_points_outside(ws: Workspace, tmp_path: Path) -> None:
    os.symlink(tmp_path / "secret.txt", ws.root / "src" / "innocent.txt")
    with pytest.raises(AccessError, match="outside the workspace"):
        ws.read_file("src/innocent.txt")
    assert "src/innocent.txt" not in ws.list_files()


def test_read_file_refuses_binaries_folders_and_missing_files(ws: Workspace) -> None:
    with pytest.raises(AccessError, match="binary"):
        ws.read_file("logo.png")
    with pytest.raises(ZhixingError, match="is a folder"):
        ws.read_file("src")
    with pytest.raises(NotFoundError, match="does not exist"):
        ws.read_file("src/nope.txt")


def test_read_file_reads_gbk_encoded_chinese(ws: Workspace) -> None:
    (ws.root / "gbk.java").write_bytes("// 用户登录\n".encode("gbk"))
    assert ws.read_file("gbk.java") == "1| // 用户登录"


# --- list_files and grep on the sample project -------------------------------------------------


def test_list_files_lists_the_sample_sorted_and_relative() -> None:
    files = Workspace.from_dir(SAMPLE).list_files()
    assert files == sorted(files)
    assert {"pom.xml", "README.md", f"{JAVA}/repository/ProductRepository.java"} <= set(files)
    assert all(not f.startswith("/") for f in files)
    java = Workspace.from_dir(SAMPLE).list_files("*.java")
    assert java and all(f.endswith(".java") for f in java)
    assert Workspace.from_dir(SAMPLE).list_files("src/**/controller/*.java", limit=2) == [
        f"{JAVA}/controller/CartController.java",
        f"{JAVA}/controller/FileController.java",
    ]


def test_list_files_skips_hidden_folders(ws: Workspace) -> None:
    (ws.root / ".git").mkdir()
    (ws.root / ".git" / "config").write_text("[core]\n")
    assert ws.list_files() == ["logo.png", "src/a.txt"]


def test_grep_finds_the_planted_sql_injection_line() -> None:
    hits = Workspace.from_dir(SAMPLE).grep(r"stmt\.executeQuery\(sql\)", glob="*.java")
    assert hits == [
        GrepHit(
            f"{JAVA}/repository/ProductRepository.java",
            41,
            "ResultSet rs = stmt.executeQuery(sql)) {",
        )
    ]
    assert str(hits[0]).startswith(f"{JAVA}/repository/ProductRepository.java:41: ")
    statement = Workspace.from_dir(SAMPLE).grep("Statement", glob="*.java")
    assert (f"{JAVA}/repository/ProductRepository.java", 40) in {
        (h.path, h.line) for h in statement
    }


def test_grep_finds_the_planted_deserialization_and_honours_ignore_case() -> None:
    ws = Workspace.from_dir(SAMPLE)
    hits = ws.grep(r"new ObjectInputStream\(", glob="**/*.java")
    assert [(h.path, h.line) for h in hits] == [(f"{JAVA}/controller/CartController.java", 24)]
    assert ws.grep("objectinputstream", glob="*.java") == []
    assert len(ws.grep("objectinputstream", glob="*.java", ignore_case=True)) >= 2
    assert len(ws.grep("import", glob="*.java", limit=3)) == 3


def test_grep_reports_a_bad_regex_readably() -> None:
    with pytest.raises(ZhixingError, match="not a valid regular expression"):
        Workspace.from_dir(SAMPLE).grep("executeQuery(")


def test_grep_skips_binaries_and_refuses_globs_that_leave_the_root(ws: Workspace) -> None:
    assert ws.grep("PNG") == []
    with pytest.raises(AccessError, match="inside the workspace"):
        ws.grep("x", glob="../*")


# --- globs: the old semantics, in time linear in the path --------------------------------------


@pytest.mark.parametrize(
    ("glob", "path", "expected"),
    [
        ("**/*.java", "src/main/A.java", True),
        ("**/*.java", "A.java", True),  # `**/` may match no folder at all
        ("*.java", "src/main/A.java", True),  # no `/`: in any folder
        ("src/*.java", "src/main/A.java", False),  # `*` stays inside one folder
        ("src/**/*.java", "src/A.java", True),
        ("src/**", "src/a/b/c.txt", True),  # `**` crosses folders
        ("src/?.java", "src/A.java", True),
        ("src/?.java", "src/AB.java", False),
        ("src?A.java", "src/A.java", False),  # `?` never matches `/`
        ("**/test*/*.py", "a/tests/x.py", True),
        ("**/test*/*.py", "a/tests/b/x.py", False),
        ("a**b", "a/x/y/b", True),
        ("**/**/*.md", "README.md", True),
        ("docs/[x].md", "docs/[x].md", True),  # brackets and dots are literal
        ("docs/.md", "docs/amd", False),
    ],
)
def test_globs_keep_their_meaning(glob: str, path: str, expected: bool) -> None:
    assert glob_matcher(glob)(path) is expected


@pytest.mark.parametrize(
    "glob",
    [
        "*" * 14 + "!",  # the glob that took 50 to 100 s over the 15-file sample
        "*" * 14 + "!*",
        "*a*a*a*a*a*a*a*a*a*a*a*a*a*a*",
        "**a**a**a**a**a**a**a**a**a**a**a**a**b",
        "?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*b*",
        ("**/*" * 64)[:256],
    ],
)
def test_a_pathological_glob_matches_a_long_path_in_milliseconds(glob: str) -> None:
    matches = glob_matcher(glob)
    path = "a" * 250 + "/" + "a" * 250
    started = time.perf_counter()
    for _ in range(10):
        matches(path)
    assert (time.perf_counter() - started) / 10 < 0.05  # a Python `re` took minutes


def test_list_files_answers_a_pathological_glob_over_the_sample_at_once() -> None:
    started = time.perf_counter()
    assert Workspace.from_dir(SAMPLE).list_files("*" * 14 + "!") == []  # 50 s at 4d2a7e4
    assert time.perf_counter() - started < 1.0


def test_a_glob_longer_than_the_bound_is_refused_with_a_sentence(ws: Workspace) -> None:
    with pytest.raises(ZhixingError, match=f"longer than {MAX_GLOB_CHARS} characters"):
        ws.list_files("*a" * 200)


def test_one_deadline_covers_the_listing_of_a_grep(ws: Workspace) -> None:
    # A deadline already spent: the grep stops while listing, before searching a single line.
    with pytest.raises(ZhixingError, match="Listing .* took longer than"):
        ws.grep("line", deadline=time.monotonic() - 1)
    with pytest.raises(ZhixingError, match="took longer than 3 s"):
        ws.list_files("**/*", deadline=time.monotonic() - 1)
