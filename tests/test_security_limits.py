"""Limits found by the security review: who may export, and what one hostile file may cost
(a .docx zip bomb, a PDF too big or too slow to parse)."""

from __future__ import annotations

import io
import os
import struct
import sys
import time
import zipfile
from pathlib import Path

import docx
import pytest

from tests.test_ingest_pdf import make_pdf, text, write
from zhixing.core.auth import User
from zhixing.core.errors import AccessError, NotFoundError, ParseError
from zhixing.core.ingest import parse_file, pdf, word

MiB = 2**20

# --- export is an editor's right -----------------------------------------------------------


def test_exporting_needs_the_editor_role_and_keeps_restricted_kbs_invisible(service, tmp_path):
    for name, role in (("v", "viewer"), ("e", "editor"), ("m", "editor")):
        service.users.add(name, role, f"{name}-password")
    doc = tmp_path / "firewall.md"
    doc.write_text("# Firewall\n\nDeny by default.", encoding="utf-8")
    service.kbs.create("open")
    service.builds.add("open", [doc])
    service.kbs.create("secret")
    service.kbs.restrict("secret", ["m"])
    viewer, editor = service.as_user(User("v", "viewer")), service.as_user(User("e", "editor"))
    archive = tmp_path / "open.zip"
    for name in ("open", "secret"):  # the role is checked first: the viewer learns nothing
        with pytest.raises(
            AccessError,
            match=r"^v \(viewer\) may not export knowledge bases: that needs the editor role;"
            r" ask an admin\.$",
        ):
            viewer.kbs.export_archive(name, archive)
    assert not archive.exists()
    assert editor.kbs.export_archive("open", archive).counts["documents"] == 1
    assert archive.exists()
    with pytest.raises(NotFoundError, match="no knowledge base named 'secret' that e may see"):
        editor.kbs.export_archive("secret", tmp_path / "secret.zip")
    assert not (tmp_path / "secret.zip").exists()
    exports = [(e.user, e.target) for e in service.admin.audit_log() if e.action == "kb.export"]
    assert exports == [("e", "open")]


# --- a .docx that unpacks without limit ----------------------------------------------------


def _padded_docx(path: Path, padding: int) -> Path:
    """A valid .docx whose document.xml carries `padding` blank bytes (they deflate to ~nothing)."""
    document = docx.Document()
    document.add_paragraph("Deny by default.")
    buffer = io.BytesIO()
    document.save(buffer)
    with zipfile.ZipFile(buffer) as source, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == "word/document.xml":
                data = data.replace(b"<w:body>", b"<w:body>" + b" " * padding, 1)
            out.writestr(info.filename, data)
    return path


def test_a_docx_that_unpacks_past_the_cap_is_refused_from_its_declared_sizes(tmp_path, monkeypatch):
    path = _padded_docx(tmp_path / "bomb.docx", 2 * MiB)
    assert path.stat().st_size < 64 * 1024  # small on disk, 2 MB unpacked
    assert parse_file(path).pages[0].text == "Deny by default."  # a valid document otherwise
    monkeypatch.setattr(word, "MAX_UNPACKED_BYTES", MiB)

    def no_member_read(*_args, **_kwargs):
        raise AssertionError("a member was read before the sizes were checked")

    monkeypatch.setattr(zipfile.ZipFile, "open", no_member_read)
    with pytest.raises(
        ParseError,
        match=r"^bomb\.docx unpacks to more than 1 MB, which looks like a zip bomb; re-save it"
        r" from Word or split it into smaller documents\.$",
    ):
        parse_file(path)


def _declare_size(path: Path, member: str, size: int) -> None:
    """Rewrite `member`'s uncompressed size in its local and central headers: a lying zip."""
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        local = archive.getinfo(member).header_offset
    struct.pack_into("<I", data, local + 22, size)
    central = data.rindex(b"PK\x01\x02", 0, data.rindex(member.encode()))
    struct.pack_into("<I", data, central + 24, size)
    path.write_bytes(bytes(data))


def test_a_docx_whose_headers_understate_its_size_is_never_read_past_the_cap(tmp_path, monkeypatch):
    path = _padded_docx(tmp_path / "liar.docx", 2 * MiB)
    _declare_size(path, "word/document.xml", 1000)
    monkeypatch.setattr(word, "MAX_UNPACKED_BYTES", MiB)
    read: list[int] = []
    real_read = zipfile.ZipExtFile.read

    def counted_read(self, n=-1):
        data = real_read(self, n)
        read.append(len(data))
        return data

    monkeypatch.setattr(zipfile.ZipExtFile, "read", counted_read)
    # zipfile itself stops at the declared size and then fails the CRC: either refusal will do.
    with pytest.raises(ParseError, match=r"^liar\.docx (unpacks to more than|is not a valid)"):
        parse_file(path)
    assert sum(read) <= MiB


# --- a PDF too big, or too slow, to parse --------------------------------------------------


def test_a_pdf_over_the_size_cap_is_refused_before_it_is_opened(tmp_path, monkeypatch):
    page = make_pdf([text(72, 700, "Deny by default.")])
    path = write(tmp_path / "big.pdf", page + b"%" + b"x" * MiB + b"\n")
    assert "Deny by default." in parse_file(path).pages[0].text
    monkeypatch.setattr(pdf, "MAX_PDF_BYTES", MiB)

    def no_open(_path):
        raise AssertionError("the PDF was opened before its size was checked")

    monkeypatch.setattr(pdf, "open_pdf", no_open)
    with pytest.raises(
        ParseError, match=r"^big\.pdf is larger than the 1 MB a PDF may be; split it into"
    ):
        parse_file(path)


def test_a_pdf_parse_past_the_time_limit_is_stopped_with_a_sentence(tmp_path, monkeypatch):
    path = write(tmp_path / "slow.pdf", make_pdf([text(72, 700, "Deny by default.")]))
    # Even the real worker's start takes longer than a millisecond.
    monkeypatch.setattr(pdf, "PARSE_TIMEOUT_S", 0.001)
    with pytest.raises(
        ParseError,
        match=r"^slow\.pdf took longer than the 0\.001-second limit to parse and was stopped;"
        r" check that it is not damaged, or split it into smaller files\.$",
    ):
        parse_file(path)


@pytest.mark.process
def test_a_hung_pdf_worker_is_killed_at_the_deadline(tmp_path, monkeypatch):
    """A worker that never answers (a parser looping on a hostile page) is killed, not awaited."""
    path = write(tmp_path / "hang.pdf", make_pdf([text(72, 700, "Deny by default.")]))
    pid_file = tmp_path / "worker.pid"
    hang = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    monkeypatch.setattr(pdf, "_worker_command", lambda: [sys.executable, "-c", hang])
    monkeypatch.setattr(pdf, "PARSE_TIMEOUT_S", 2.0)
    started = time.monotonic()
    with pytest.raises(ParseError, match=r"^hang\.pdf took longer than the 2-second limit"):
        parse_file(path)
    assert time.monotonic() - started < 20
    with pytest.raises(ProcessLookupError):  # killed and reaped
        os.kill(int(pid_file.read_text()), 0)
