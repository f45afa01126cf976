"""Background build jobs (core/build/background.py), on a real service: Milvus Lite and SQLite in a temp dir."""

from __future__ import annotations

import pytest

from zhixing.core.build.background import BuildJobs
from zhixing.core.config import Settings
from zhixing.core.errors import BuildBusyError, ZhixingError
from zhixing.core.service import KnowledgeService

ZH = "# 会话管理\n\n登录成功后必须重新生成会话标识，防止会话固定攻击。\n".encode()
EN = b"# Input validation\n\nAll input must be validated on the server before use.\n"


@pytest.fixture
def svc(tmp_path, embedder):
    service = KnowledgeService(Settings(home=tmp_path / "home", parse_workers=1), embedder=embedder)
    service.kbs.create("kb", mode="graph")
    yield service
    service.close()


@pytest.fixture
def jobs():
    registry = BuildJobs()
    yield registry
    registry.wait_all(120)


def test_a_job_builds_uploads_under_their_names_and_reports_progress(svc, jobs):
    job = jobs.start(svc.builds, "kb", [("会话.md", ZH), ("sub/dir/input.md", EN)])
    assert job.running and job.kb == "kb" and job.files == ("会话.md", "input.md")
    job = jobs.wait(job.id, 120)
    assert job.state == "done" and job.fraction == 1.0
    assert (job.done, job.total) == (2, 2) and job.chunks >= 2
    assert sorted(job.report.added) == ["input.md", "会话.md"]
    stages = [line.stage for line in job.log]
    assert "scan" in stages and "done" in stages
    assert all(line.at >= job.started_at for line in job.log)
    assert {d.source: d.status for d in svc.kbs.documents("kb")} == {
        "input.md": "indexed",
        "会话.md": "indexed",
    }
    assert svc.search.query("会话固定", ["kb"])[0].document == "会话.md"
    assert jobs.list("kb")[0].id == job.id and jobs.running("kb") is None


def test_the_upload_staging_folder_is_removed_after_the_build(svc, jobs):
    job = jobs.wait(jobs.start(svc.builds, "kb", [("a.md", EN)]).id, 120)
    assert job.state == "done"
    assert not (svc.settings.home / "uploads" / job.id).exists()


def test_a_cancelled_job_ends_cancelled_and_leaves_the_knowledge_base_usable(svc, jobs):
    uploads = [
        (f"doc-{i:02d}.md", EN.replace(b"server", f"server {i}".encode())) for i in range(40)
    ]
    job = jobs.start(svc.builds, "kb", uploads)
    jobs.cancel(job.id)
    job = jobs.wait(job.id, 120)
    assert job.state == "cancelled" and job.cancel_requested
    assert job.done < job.total == 40
    built = svc.kbs.documents("kb")
    assert len(built) < 40 and all(d.status == "indexed" for d in built)
    # Resumable: the same upload again builds the rest and skips what is there.
    again = jobs.wait(jobs.start(svc.builds, "kb", uploads).id, 120)
    assert again.state == "done" and len(again.report.skipped) == len(built)
    assert len(svc.kbs.documents("kb")) == 40


def test_a_second_job_on_a_busy_knowledge_base_is_refused_readably(svc, jobs):
    uploads = [
        (f"doc-{i:02d}.md", EN.replace(b"server", f"server {i}".encode())) for i in range(20)
    ]
    first = jobs.start(svc.builds, "kb", uploads)
    with pytest.raises(BuildBusyError, match="正在构建中"):
        jobs.start(svc.builds, "kb", [("other.md", EN)])
    with pytest.raises(BuildBusyError):
        jobs.check_idle("kb")
    assert len(jobs.list("kb")) == 1
    jobs.cancel(first.id)
    jobs.wait(first.id, 120)
    jobs.check_idle("kb")  # free again


def test_a_bad_file_is_recorded_as_a_readable_failure_while_the_rest_builds(svc, jobs):
    job = jobs.start(
        svc.builds, "kb", [("broken.pdf", b"%PDF-1.4 not really a pdf"), ("ok.md", EN)]
    )
    job = jobs.wait(job.id, 120)
    assert job.state == "done" and job.report.added == ["ok.md"]
    [failure] = job.report.failed
    assert failure.source == "broken.pdf" and "broken.pdf" in failure.error


def test_a_job_for_a_missing_knowledge_base_or_without_files_is_refused(svc, jobs):
    with pytest.raises(ZhixingError, match="nope"):
        jobs.start(svc.builds, "nope", [("a.md", EN)])
    with pytest.raises(ZhixingError, match="没有要构建的文件"):
        jobs.start(svc.builds, "kb", [])
    assert jobs.list() == []


def test_a_build_error_ends_the_job_failed_with_its_message(svc, jobs):
    svc._home.catalog.create_kb("old", embedding="some-other-model", dimension=8)
    job = jobs.wait(jobs.start(svc.builds, "old", [("a.md", EN)]).id, 120)
    assert job.state == "failed" and job.report is None
    assert "some-other-model" in job.error and "ZHIXING_EMBEDDING" in job.error
    assert not (svc.settings.home / "uploads" / job.id).exists()


def test_a_finished_job_can_be_dismissed(svc, jobs):
    job = jobs.wait(jobs.start(svc.builds, "kb", [("a.md", EN)]).id, 120)
    jobs.forget(job.id)
    assert jobs.get(job.id) is None and jobs.list() == []


def test_a_job_of_another_host_lives_while_its_heartbeat_is_fresh() -> None:
    from zhixing.core.build.durable import STALE_S, owner_alive, this_process

    me = this_process()
    now = 1_000_000.0
    # Another machine: its pid means nothing here; its heartbeat says whether it runs.
    other = {"pid": me.pid, "pid_started": me.started, "host": f"{me.host}-other"}
    assert owner_alive({**other, "heartbeat": now - 1}, now)
    assert not owner_alive({**other, "heartbeat": now - STALE_S - 1}, now)
    # This host (or a row from before hosts were recorded): the pid decides, not the heartbeat.
    for host in (me.host, ""):
        assert owner_alive({**other, "host": host, "heartbeat": 0}, now)
        gone = {**other, "host": host, "pid": 2**22 + 7, "heartbeat": now}
        assert not owner_alive(gone, now)


def test_a_kept_upload_whose_name_climbs_out_of_its_folder_is_never_written(tmp_path, svc):
    from zhixing.core.build.durable import JobRecord, local_paths

    jobs = svc._home.catalog.jobs
    jobs.keep_staged("f1", [("../../escaped.md", b"# no")])
    job = JobRecord.from_row(
        {
            "id": 1,
            "kb_id": 1,
            "status": "interrupted",
            "paths": '["/gone/f1/x.md"]',
            "staging": "/gone/f1",
        }  # fmt: skip
    )
    with pytest.raises(ZhixingError, match="outside its folder"):
        local_paths(jobs, job, tmp_path / "home")
    assert not list(tmp_path.rglob("escaped.md"))
