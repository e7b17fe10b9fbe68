"""The pages through Starlette's TestClient on a real SQLite ledger, on a loopback dashboard
signed in by its one-time link: what the list and a run's page show, that every value is
escaped, the security headers, the logs and artifacts as stored, the JSON API and the
actions' signals."""

from __future__ import annotations

import ipaddress
import re

import pytest
from starlette.testclient import TestClient

from app.dashboard.security import CONTENT_SECURITY_POLICY
from app.words import status_text
from runner.ledger.records import NewEvent, NewRun
from runner.names import EventType, SignalKind, SignalStatus
from runner.status import read_status
from runner.subagents import Planned, Subagent, SubagentResult, SubagentStatus
from runner.workflow import State
from tests.dashboard.conftest import (
    FAILING_LOG,
    LOCAL_HOST,
    LOOPBACK_PEER,
    SPEC,
    T0,
    WEB,
    Writer,
    dashboard_app,
    link_config,
    link_path,
    tell_story,
    waiting_run,
)


@pytest.fixture
def woken() -> list[str]:
    return []


@pytest.fixture
def client(store, woken):
    config = link_config(operator="root")
    app, _ = dashboard_app(store, config, wake=woken.append)
    with TestClient(app, base_url=LOCAL_HOST, client=LOOPBACK_PEER) as test_client:
        assert test_client.get(link_path(config)).status_code == 200
        yield test_client


def test_list_shows_runs_newest_first_with_filters_and_paging(store, client):
    tell_story(store, run_id="r-story", at=T0)
    waiting_run(store, "r-wait", repo=f"{WEB}/acme/widgets.git", at=T0 + 500)
    for i in range(55):
        store.create_run(NewRun(id=f"r-q{i:03d}", repo="/srv/other", title=f"queued {i}"),
                         now=T0 + 1000 + i)
    page = client.get("/")
    assert page.status_code == 200
    rows = re.findall(r'<tr data-run="([^"]+)">', page.text)
    assert len(rows) == 50 and rows[0] == "r-q054"
    assert "Older →" in page.text and "← Newer" not in page.text
    older = client.get(re.search(r'href="([^"]+)" rel="next"', page.text).group(1).replace(
        "&amp;", "&"))
    second = re.findall(r'<tr data-run="([^"]+)">', older.text)
    assert second == ["r-q004", "r-q003", "r-q002", "r-q001", "r-q000", "r-wait", "r-story"]
    assert "← Newer" in older.text and "Older →" not in older.text

    waiting = client.get("/", params={"state": "awaiting_approval"})
    assert re.findall(r'<tr data-run="([^"]+)">', waiting.text) == ["r-wait"]
    # A GitHub repository shows as owner/name, linked, with its issue; a local one as a path.
    by_repo = client.get("/", params={"repo": f"{WEB}/acme/widgets.git"})
    assert re.findall(r'<tr data-run="([^"]+)">', by_repo.text) == ["r-wait"]
    assert f'<a href="{WEB}/acme/widgets">acme/widgets</a>' in by_repo.text
    story_row = client.get("/", params={"repo": "/srv/calc"}).text
    assert '<span class="path">/srv/calc</span>' in story_row and "#7" in story_row
    # The story's machine time (its agents' 70.5 s and its checks' 1.5 s), labelled as time.
    assert re.search(r'<td class="num time" title="agents 1m 10s, checks 1.5s">1m 12s</td>',
                     story_row)
    assert client.get("/", params={"before": "nope"}).status_code == 400


def test_run_page_shows_the_four_answers_diagram_timeline_and_evidence(store, client):
    story = tell_story(store)
    page = client.get(f"/runs/{story.run_id}")
    assert page.status_code == 200
    html = page.text
    # The four answers at the top, before everything else.
    status = html.index('id="status"')
    assert status < html.index('id="workflow"') < html.index('id="timeline"')
    assert "publish.1</code>" in html
    assert "none: the run is done" in html
    # The diagram: the current state, the path taken (verify twice, through repair).
    assert re.search(r'class="node visited current" data-state="done"', html)
    assert 'data-edge="verify-repair"' in html and 'data-edge="repair-verify"' in html
    assert re.search(r'class="edge taken" data-edge="repair-verify"', html)
    assert "\u00d72" in html  # verify, twice
    # The timeline: the takeover and who took over, the reconciliation, lease epochs.
    assert "takeover: host-b:202 took the run over from host-a:101" in html
    assert "lease of host-a:101 (epoch 1) expired" in html
    assert "reconciled: pull_request found already applied" in html
    # Checkpoints with their verified hashes; effects with their keys and links.
    assert html.count(">verified<") == 9
    assert f'{story.run_id}:specify.1:pull-request' in html
    assert f'href="{WEB}/acme/widgets/pull/12"' in html
    # The spec with its hash and who approved it; verification per round, logs as stored.
    assert "sha256 <code class=\"hash\">" in html and "approved by <strong>alice</strong>" in html
    assert "verify.2</code> <span class=\"conclusion c-success\">success" in html
    assert "verify.1</code> <span class=\"conclusion c-failure\">failure" in html
    assert f'/runs/{story.run_id}/logs/{story.failing_log_sha}' in html
    assert "Agent time</dt><dd>1m 10s" in html


def test_every_value_is_escaped_and_pages_carry_no_inline_code(store, client):
    story = tell_story(store)
    client.get(f"/runs/{story.run_id}/logs/{story.failing_log_sha}")
    for path in ("/", f"/runs/{story.run_id}"):
        html = client.get(path).text
        assert "<script>alert" not in html
        assert "Add calc &lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; more" in html
        # Scripts only from this site, no inline handlers or styles (the CSP forbids them).
        assert re.findall(r"<script[^>]*>", html) == ['<script src="/static/live.js" defer>']
        assert not re.search(r"\son[a-z]+=", html) and " style=" not in html


def test_security_headers_on_every_page(store, client):
    story = tell_story(store)
    for path in ("/", f"/runs/{story.run_id}", "/api/runs", "/login", "/runs/missing"):
        headers = client.get(path, follow_redirects=False).headers
        assert headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert "frame-ancestors 'none'" in headers["content-security-policy"]
        assert "'unsafe-inline'" not in headers["content-security-policy"]
        assert headers["x-frame-options"] == "DENY"
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["cache-control"] == "no-store"
    assert "no-store" not in client.get("/static/dashboard.css").headers.get("cache-control",
                                                                              "")


def test_logs_and_artifacts_are_served_as_stored_plain_text(store, client):
    story = tell_story(store)
    log = client.get(f"/runs/{story.run_id}/logs/{story.failing_log_sha}")
    assert log.status_code == 200 and log.content == FAILING_LOG
    assert log.headers["content-type"] == "text/plain; charset=utf-8"
    # Only this run's check logs: not another blob, even one of this run.
    spec_sha = store.artifacts(story.run_id)["spec.md"]
    assert client.get(f"/runs/{story.run_id}/logs/{spec_sha}").status_code == 404
    spec = client.get(f"/runs/{story.run_id}/artifacts/spec.md")
    assert spec.content == SPEC and spec.headers["content-type"].startswith("text/plain")
    assert client.get(f"/runs/{story.run_id}/artifacts/nope.md").status_code == 404
    page = client.get(f"/runs/{story.run_id}").text
    # The latest round's logs and earlier failures are shown inline, escaped.
    assert "Ran 1 test" in page and "&lt;b&gt;bold?&lt;/b&gt;" in page
    assert "<b>bold?</b>" not in page


def test_run_page_lists_research_subagents_with_links_to_their_artifacts(store, client):
    run = store.create_run(NewRun(id="r-sub", repo="/srv/calc", title="Fan out"), now=T0)
    lease = store.acquire_lease(run.id, "host-a:1", ttl=30, now=T0)
    plan = [Subagent("alpha", "How is it built?"), Subagent("beta", "How is it tested?")]
    done = SubagentResult("alpha", SubagentStatus.COMPLETED, artifact="subagents/alpha.md",
                          note="Builds with <make>.")
    store.append(lease, events=[
        NewEvent(EventType.SUBAGENTS_PLANNED, step="research.1", attempt=1,
                 data=Planned("research.1", tuple(plan), {}).event_data()),
        NewEvent(EventType.SUBAGENT_COMPLETED, step="research.1", attempt=1,
                 data={"result": done.to_dict()}),
    ], artifacts={"subagents/alpha.md": b"# alpha\n"}, now=T0 + 1)

    html = client.get("/runs/r-sub").text
    section = html[html.index('id="subagents"'):html.index('id="spec"')]
    assert '<a href="/runs/r-sub/artifacts/subagents/alpha.md">subagents/alpha.md</a>' in section
    assert "Builds with &lt;make&gt;." in section
    assert re.search(r"<code>beta</code></td>\s*<td><span class=\"status st-pending\">", section)
    assert client.get("/runs/r-sub/artifacts/subagents/alpha.md").content == b"# alpha\n"


def test_unknown_run_is_404_and_the_api_answers_json(store, client):
    story = tell_story(store)
    assert client.get("/runs/r-nope").status_code == 404
    assert client.get("/api/runs/r-nope").json() == {"error": "no run r-nope that you can see"}
    runs = client.get("/api/runs").json()
    assert [r["run_id"] for r in runs] == [story.run_id] and runs[0]["state"] == "done"
    assert client.get("/api/runs?limit=x").status_code == 400
    status = client.get(f"/api/runs/{story.run_id}").json()["status"]
    assert status["completed_steps"][-1] == "publish.1"
    assert status["next_action"]["kind"] == "none_done"


def test_the_api_lists_each_runs_cost_as_its_status_sums_it(store, client):
    story = tell_story(store)
    tell_story(store, run_id="r-unpriced", at=T0 + 100,
               usage={"research.1": {"input_tokens": 10, "agent_seconds": 3.0}})
    store.create_run(NewRun(id="r-new", repo="/srv/calc", title="nothing ran"), now=T0 + 200)
    runs = {r["run_id"]: r for r in client.get("/api/runs").json()}
    usage = runs[story.run_id]["usage"]
    assert usage["cost_usd"] == pytest.approx(0.25)
    assert (usage["input_tokens"], usage["output_tokens"]) == (4700, 1100)
    assert (usage["agent_runs"], usage["unpriced_runs"]) == (4, 1)
    assert runs["r-unpriced"]["usage"]["unpriced_runs"] == 1
    assert runs["r-new"]["usage"]["agent_runs"] == 0
    for run_id, listed in runs.items():
        status = client.get(f"/api/runs/{run_id}").json()["status"]
        if listed["usage"]["agent_runs"]:
            assert listed["usage"] == status["usage"]["total"]
    # A filtered, paged answer carries them too.
    [only] = client.get("/api/runs", params={"limit": 1, "before": "r-new"}).json()
    assert only["run_id"] == "r-unpriced" and only["usage"]["input_tokens"] == 10


def test_list_shows_dollars_and_tokens_per_run_and_their_totals(store, client):
    story = tell_story(store)
    tell_story(store, run_id="r-unpriced", at=T0 + 100,
               usage={"research.1": {"input_tokens": 10, "agent_seconds": 3.0}})
    store.create_run(NewRun(id="r-new", repo="/srv/calc", title="nothing ran"), now=T0 + 200)
    html = client.get("/").text
    cells = dict(re.findall(r'<tr data-run="([^"]+)">.*?<td class="num cost"[^>]*>([^<]*)</td>',
                            html, re.S))
    assert cells == {story.run_id: "$0.25 + 1 unpriced", "r-unpriced": "unpriced",
                     "r-new": "none"}
    assert "$0.00" not in html
    tokens = re.findall(r'<td class="num tokens">([^<]*)</td>', html)
    assert tokens[:3] == ["", "10 tokens (10 in, 0 out)", "5.8k tokens (4.7k in, 1.1k out)"]
    # The totals row: every listed run's agent runs summed, and their machine time.
    footer = html[html.index("<tfoot>"):html.index("</tfoot>")]
    assert "Total of these 3 runs" in footer
    assert '<td class="num cost" title="5 agent run(s)">$0.25 + 2 unpriced</td>' in footer
    assert '<td class="num tokens">5.8k tokens (4.7k in, 1.1k out)</td>' in footer
    assert ">2m 24s</td>" in footer  # 1m 12s each
    # Filtered to one run, the totals are that run's.
    only = client.get("/", params={"state": "queued"}).text
    assert "Total of these 1 runs" in only and 'title="0 agent run(s)">none</td>' in only


def test_run_page_shows_cost_per_agent_step_total_and_budget_left(store, client):
    story = tell_story(store)
    html = client.get(f"/runs/{story.run_id}").text
    # The four answers say what was spent and what the budget has left ...
    spent = re.search(r'<dd id="spent">(.*?)</dd>', html, re.S).group(1)
    assert "<strong>$0.25 + 1 unpriced</strong> · 5.8k tokens (4.7k in, 1.1k out)" in spent
    assert "$0.75 left of $1.00" in spent and "6 agent run(s) left of 10 agent run(s)" in spent
    # ... in the numbers `ratchet status` prints (one usage_view, one say_cost and say_tokens).
    line = next(line for line in status_text(read_status(store, story.run_id, now=T0 + 999))
                .splitlines() if line.startswith("spent: "))
    assert line.startswith("spent: $0.25 + 1 unpriced · 5.8k tokens (4.7k in, 1.1k out)")
    assert "(budget: $0.25 of $1.00; 4 agent run(s) of 10 agent run(s))" in line
    # Each agent step, with its own cost; an unpriced one says so.
    section = html[html.index('id="cost"'):]
    steps = re.findall(r'<tr class="agent-step">\s*<td><code>([^<]+)</code>.*?'
                       r'<td class="num cost">([^<]*)</td>\s*<td class="num tokens">([^<]*)</td>',
                       section, re.S)
    assert steps == [("research.1", "$0.12", "1.8k tokens (1.5k in, 300 out)"),
                     ("specify.1", "$0.08", "1.0k tokens (800 in, 200 out)"),
                     ("implement.1", "unpriced", "2.5k tokens (2.0k in, 500 out)"),
                     ("repair.1", "$0.05", "500 tokens (400 in, 100 out)")]
    total = re.search(r'<tr class="totals" id="run-total">(.*?)</tr>', section, re.S).group(1)
    assert '<td class="num cost">$0.25 + 1 unpriced</td>' in total
    budget = section[section.index('id="budget"'):section.index("</table>",
                                                               section.index('id="budget"'))]
    assert re.search(r"<td>dollars</td><td[^>]*>\$1.00</td><td[^>]*>\$0.25</td>"
                     r"<td[^>]*><strong>\$0.75</strong>", budget)


def test_run_page_without_a_budget_or_agent_says_so(store, client):
    waiting_run(store, "r-wait")
    html = client.get("/runs/r-wait").text
    assert "nothing yet: no agent has run" in html and "none (no budget)" in html
    assert "No budget: this run's spending has no limit." in html
    assert "No agent has run yet." in html and "$0.00" not in html


def test_the_timeline_folds_bookkeeping_and_shows_what_happened(store, client):
    story = tell_story(store)
    html = client.get(f"/runs/{story.run_id}").text
    timeline = html[html.index('<div id="timeline"'):html.index("</section>",
                                                                html.index('id="timeline"'))]
    folds = re.findall(r'<details id="(fold-\d+)" class="fold">\s*<summary>(\d+) bookkeeping'
                       r' events?', timeline)
    assert folds and " open" not in re.findall(r'<details id="fold-[^>]*>', timeline)[0]
    # Outside the folds: what happened, the takeover among it; inside: the bookkeeping only.
    outside = re.sub(r'<tr class="fold">.*?</details>\s*</td></tr>', "", timeline, flags=re.S)
    inside = re.findall(r'<tr class="fold">(.*?)</details>\s*</td></tr>', timeline, re.S)
    shown = re.findall(r'data-event="([A-Z_]+)"', outside)
    folded = [kind for part in inside for kind in re.findall(r'data-event="([A-Z_]+)"', part)]
    assert {"RUN_CREATED", "SPEC_APPROVED", "CHECK_COMPLETED", "TESTS_FAILED",
            "VERIFICATION_PASSED", "RUN_COMPLETED", "AGENT_USAGE", "EFFECT_RECONCILED",
            "LEASE_EXPIRED"} <= set(shown)
    assert "takeover: host-b:202 took the run over from host-a:101" in outside
    assert set(folded) == {"LEASE_ACQUIRED", "EFFECT_INTENDED", "EFFECT_ATTEMPTED"}
    assert sum(int(n) for _, n in folds) == len(folded)
    # Nothing is lost: every event is on the page once.
    assert len(shown) + len(folded) == len(store.events(story.run_id))


def test_a_dashboard_without_github_sign_in_answers_its_link_on_loopback_only(store):
    config = link_config()
    app, _ = dashboard_app(store, config)
    # A page elsewhere resolving its own name to 127.0.0.1 (DNS rebinding) is refused.
    with TestClient(app, base_url="http://attacker.example:8000",
                    client=LOOPBACK_PEER) as elsewhere:
        assert elsewhere.get(link_path(config)).status_code == 403
        assert elsewhere.get("/api/runs").status_code == 403
        assert elsewhere.get("/healthz").status_code == 200  # not the dashboard's
    with TestClient(app, base_url="http://localhost:8000", client=LOOPBACK_PEER) as local:
        # Reaching the port is not enough: no page, no API, no action without the link.
        assert local.get("/", follow_redirects=False).headers["location"] == "/login?next=%2F"
        assert local.get("/api/runs").status_code == 401
        assert local.post("/runs/r-x/cancel", data={}).status_code == 401
        assert "sign-in link" in local.get("/login").text
        used = link_path(config)
        opened = local.get(used + "&next=1", follow_redirects=False)
        assert opened.status_code == 303 and opened.headers["location"] == "/?next=1"
        assert local.get("/").status_code == 200
    with TestClient(app, base_url="http://localhost:8000", client=LOOPBACK_PEER) as again:
        assert again.get(used).status_code == 403  # a link works once
        assert again.get("/api/runs").status_code == 401


def test_forwarded_headers_count_only_from_a_trusted_proxy(store):
    config = link_config(trusted_proxies=(ipaddress.ip_network("10.1.2.3/32"),))
    app, _ = dashboard_app(store, config)
    with TestClient(app, base_url=LOCAL_HOST, client=LOOPBACK_PEER) as local:
        assert local.get(link_path(config)).status_code == 200
        cookies = dict(local.cookies)
    stranger = {"X-Forwarded-For": "203.0.113.50"}
    # A loopback peer that forwards for someone is a proxy nobody declared.
    with TestClient(app, base_url=LOCAL_HOST, client=LOOPBACK_PEER, cookies=cookies) as proxied:
        assert proxied.get("/", headers=stranger).status_code == 403
        assert proxied.get("/", headers={"Forwarded": "for=203.0.113.50"}).status_code == 403
        assert proxied.get("/").status_code == 200
    with TestClient(app, base_url=LOCAL_HOST, client=("10.1.2.3", 4000),
                    cookies=cookies) as trusted:
        # The declared proxy's client is believed: a stranger is not this host...
        refused = trusted.get("/", headers=stranger)
        assert refused.status_code == 403 and "203.0.113.50" in refused.text
        assert trusted.get("/", headers={"X-Forwarded-Proto": "http"}).status_code == 403
        # ...and this host's own browser through it is.
        assert trusted.get("/", headers={"X-Forwarded-For": "127.0.0.1"}).status_code == 200
    with TestClient(app, base_url=LOCAL_HOST, client=("10.9.9.9", 4000),
                    cookies=cookies) as untrusted:
        assert untrusted.get("/", headers={"X-Forwarded-For": "127.0.0.1"}).status_code == 403
        assert untrusted.get("/").status_code == 403  # not this host, whatever its Host says


def test_approve_from_the_page_records_a_signal_and_wakes_the_run(store, client, woken):
    spec_sha = waiting_run(store, "r-wait")
    page = client.get("/runs/r-wait").text
    assert f"Approve spec {spec_sha[:12]}" in page
    form = _form(page, "approve")
    sent = client.post("/runs/r-wait/approve", data=form, follow_redirects=False,
                       headers={"Origin": LOCAL_HOST})
    assert sent.status_code == 303 and sent.headers["location"] == "/runs/r-wait#signals"
    # The same form sent again (a double click) is the same signal.
    client.post("/runs/r-wait/approve", data=form, headers={"Origin": LOCAL_HOST})
    [signal] = store.signals("r-wait")
    assert (signal.kind, signal.author, signal.origin) == (SignalKind.APPROVE, "root", "local")
    assert signal.payload.to_stored() == {"hash": spec_sha}
    assert signal.status is SignalStatus.PENDING
    assert woken == ["r-wait", "r-wait"]
    assert "Waiting to be answered: approve by root" in client.get("/runs/r-wait").text

    changes = _form(client.get("/runs/r-wait").text, "request-changes")
    empty = client.post("/runs/r-wait/request-changes", data={**changes, "message": "  "})
    assert empty.status_code == 400 and len(store.signals("r-wait")) == 1
    client.post("/runs/r-wait/request-changes", data={**changes, "message": "Cover <0"})
    assert store.signals("r-wait")[-1].payload.to_stored() == {"message": "Cover <0"}


def test_verify_again_is_offered_only_to_a_stopped_run_with_a_tree(store, client, woken):
    waiting_run(store, "r-wait")
    assert "/verify-again" not in client.get("/runs/r-wait").text  # nothing implemented
    run = store.create_run(NewRun(id="r-stop", repo="/srv/calc", title="Stopped"), now=T0)
    w = Writer(store, run, owner="host-a:101", at=T0)
    for state, step in ((State.RESEARCH, "research.1"), (State.SPECIFY, "specify.1"),
                        (State.AWAITING_APPROVAL, "awaiting_approval.1"),
                        (State.IMPLEMENT, "implement.1")):
        w.move(state, step)
    w.move(State.VERIFY, "verify.1", checkpoint=("implement.1", {}, {"outcome": "done"}))
    w.move(State.NEEDS_HUMAN, "verify.1", reason="checks still failing after 0 repairs")
    store.release_lease(w.lease)

    form = _form(client.get("/runs/r-stop").text, "verify-again")
    sent = client.post("/runs/r-stop/verify-again", data=form, follow_redirects=False,
                       headers={"Origin": LOCAL_HOST})
    assert sent.status_code == 303
    [signal] = store.signals("r-stop")
    assert (signal.kind, signal.author) == (SignalKind.VERIFY_AGAIN, "root")
    assert woken == ["r-stop"]


def test_a_verified_diff_is_approved_from_the_page_by_its_full_hash(store, client, woken):
    diff = "d1" * 32
    run = store.create_run(NewRun(id="r-diff", repo="/srv/calc", title="Protected"), now=T0)
    w = Writer(store, run, owner="host-a:101", at=T0)
    for state, step in ((State.RESEARCH, "research.1"), (State.SPECIFY, "specify.1"),
                        (State.AWAITING_APPROVAL, "awaiting_approval.1"),
                        (State.IMPLEMENT, "implement.1"), (State.VERIFY, "verify.1")):
        w.move(state, step)
    w.move(State.AWAITING_DIFF_APPROVAL, "awaiting_diff_approval.1",
           reason=f"the diff sha256 {diff} waits for a writer's approval: it touches"
                  " protected paths (<b>CLAUDE.md</b>)")
    store.release_lease(w.lease)

    page = client.get("/runs/r-diff").text
    assert f"Approve diff {diff[:12]}" in page and "<b>CLAUDE.md</b>" not in page
    form = _form(page, "approve-diff")
    assert form["sha256"] == diff
    bad = client.post("/runs/r-diff/approve-diff", data={**form, "sha256": diff[:12]},
                      headers={"Origin": LOCAL_HOST})
    assert bad.status_code == 400 and store.signals("r-diff") == []
    sent = client.post("/runs/r-diff/approve-diff", data=form, follow_redirects=False,
                       headers={"Origin": LOCAL_HOST})
    assert sent.status_code == 303
    [signal] = store.signals("r-diff")
    assert (signal.kind, signal.author) == (SignalKind.APPROVE_DIFF, "root")
    assert signal.payload.to_stored() == {"hash": diff} and woken == ["r-diff"]


def test_a_post_from_another_site_is_refused(store, client):
    waiting_run(store, "r-wait")
    form = _form(client.get("/runs/r-wait").text, "approve")
    evil = client.post("/runs/r-wait/approve", data=form,
                       headers={"Origin": "https://evil.example"})
    assert evil.status_code == 403
    fetched = client.post("/runs/r-wait/approve", data=form,
                          headers={"Sec-Fetch-Site": "cross-site"})
    assert fetched.status_code == 403
    forged = client.post("/runs/r-wait/approve", data={**form, "csrf_token": "guess"})
    assert forged.status_code == 403
    assert store.signals("r-wait") == []


def _form(html: str, action: str) -> dict[str, str]:
    """The hidden fields of the form that posts to ``.../<action>``."""
    found = re.search(rf'<form method="post" action="[^"]*/{action}" class="action">(.*?)</form>',
                      html, re.S)
    assert found, f"no {action} form on the page"
    return dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">',
                           found.group(1)))
