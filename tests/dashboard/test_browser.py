"""The dashboard in a real browser (Debian's chromium driven by Playwright) against the real
``ratchet`` CLI and ``ratchet serve``, with the scripted agent of the end-to-end tests.

A run is created through the CLI and waits for approval; the link ``ratchet serve`` prints
signs the browser in; the list shows it; its page shows the timeline, the diagram and the
effects; a second tab approves the spec; the first tab, never reloaded, follows the run to
done and shows the verification results. Screenshots of
both pages are saved under the test's tmp_path (their paths are printed).

A second run's agents report what they spent: its page shows the dollars, tokens and budget
left that ``ratchet status`` prints, and its timeline's bookkeeping folded until opened.
"""

from __future__ import annotations

import json

import pytest

from tests.dashboard.served import free_port, serve, sign_in_link, stop
from tests.e2e.harness import CONFIG, Ratchet, make_target_repo

pytestmark = pytest.mark.slow

POLL = "0.2"  # seconds between the dashboard's polls of the ledger


def test_list_run_page_live_update_and_approval_in_a_browser(browser, tmp_path):
    from playwright.sync_api import expect

    ratchet = Ratchet(home=tmp_path / "home", repo=make_target_repo(tmp_path / "repo"))
    created = ratchet.create()
    assert created.returncode == 0, created.stderr
    run_id = ratchet.run_id()
    port = free_port()
    log = tmp_path / "serve.log"
    server = serve(ratchet, port, log, {"RATCHET_DASHBOARD_POLL_SECONDS": POLL})
    url = f"http://127.0.0.1:{port}"
    # One browser profile: the link printed by `ratchet serve` signs both tabs in.
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    watcher = context.new_page()
    approver = context.new_page()
    try:
        # The one-time link signs in, and lands on the list without its token.
        watcher.goto(sign_in_link(log))
        watcher.wait_for_url(f"{url}/")
        # The list shows the run the CLI created.
        row = watcher.locator(f'tr[data-run="{run_id}"]')
        expect(row).to_contain_text("Add calc")
        expect(row).to_contain_text("awaiting approval")
        runs_png = tmp_path / "dashboard-runs.png"
        watcher.screenshot(path=str(runs_png), full_page=True)

        # Its page: the diagram at the approval, the timeline, the effects, the approve button.
        row.get_by_role("link", name=run_id).click()
        watcher.wait_for_url(f"{url}/runs/{run_id}")
        expect(watcher.locator("body")).to_have_class("is-live")
        expect(watcher.locator("svg.diagram g.current")).to_have_attribute(
            "data-state", "awaiting_approval")
        expect(watcher.locator('svg.diagram path.taken[data-edge="specify-awaiting_approval"]')
               ).to_have_count(1)
        expect(watcher.locator('#timeline tr[data-event="SPEC_CREATED"]')).to_have_count(1)
        expect(watcher.locator("#effects")).to_contain_text("pull request (draft)")
        expect(watcher.locator("#effects")).to_contain_text(f"{run_id}:specify.1:spec-check")
        expect(watcher.locator("#approve")).to_be_visible()
        spec = ratchet.status(run_id)["spec_sha256"]
        expect(watcher.locator("#actions")).to_contain_text(spec)
        watcher.evaluate("window.stillTheSamePage = true")

        # A second tab approves the spec from the page.
        approver.goto(f"{url}/runs/{run_id}")
        approver.locator("#approve").click()
        approver.wait_for_url(f"{url}/runs/{run_id}#signals")

        # The first tab follows the run to done without being reloaded.
        expect(watcher.locator("#run-state")).to_have_text("done", timeout=60_000)
        assert watcher.evaluate("window.stillTheSamePage") is True
        expect(watcher.locator("svg.diagram g.current")).to_have_attribute("data-state", "done")
        expect(watcher.locator('svg.diagram path.taken[data-edge="repair-verify"]')
               ).to_have_count(1)
        expect(watcher.locator('#timeline tr[data-event="SPEC_APPROVED"]')).to_contain_text(
            "approved by")
        verification = watcher.locator("#verification")
        expect(verification).to_contain_text("verify.2 success")
        expect(verification).to_contain_text("verify.1 failure")
        expect(verification.locator("tr.check-passed")).to_contain_text("unit")
        expect(watcher.locator("#signals")).to_contain_text("accepted")
        run_png = tmp_path / "dashboard-run.png"
        watcher.screenshot(path=str(run_png), full_page=True)
        print(f"\nscreenshots: {runs_png} {run_png}")
    finally:
        context.close()
        stop(server)

    status = ratchet.status(run_id)
    assert status["state"] == "done"
    assert status["completed_steps"][-1] == "publish.1"
    ratchet.assert_published_once(run_id)


def test_run_page_shows_dollars_and_the_folded_timeline_opens_in_a_browser(browser, tmp_path):
    from playwright.sync_api import expect

    ratchet = Ratchet(home=tmp_path / "home", repo=make_target_repo(
        tmp_path / "repo", config=CONFIG + "budget: {max_cost_usd: 2, max_agent_runs: 8}\n"))
    # Each agent run reports 5 cents and 1,200 tokens: research and specify, before approval.
    ratchet.env["AGENT_USAGE"] = json.dumps({"cost_usd": 0.05, "input_tokens": 1000,
                                             "output_tokens": 200, "model": "scripted-1"})
    created = ratchet.create()
    assert created.returncode == 0, created.stderr
    run_id = ratchet.run_id()
    status_text = ratchet("status", run_id)
    assert status_text.returncode == 0, status_text.stderr
    [spent_line] = [line for line in status_text.stdout.splitlines()
                    if line.startswith("spent: ")]
    # What `ratchet status` prints is what the page shows.
    assert spent_line.startswith("spent: $0.10 · 2.4k tokens (2.0k in, 400 out)"), spent_line
    port = free_port()
    log = tmp_path / "serve.log"
    server = serve(ratchet, port, log)
    url = f"http://127.0.0.1:{port}"
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    try:
        page.goto(sign_in_link(log))
        page.wait_for_url(f"{url}/")
        row = page.locator(f'tr[data-run="{run_id}"]')
        expect(row.locator("td.cost")).to_have_text("$0.10")
        expect(row.locator("td.tokens")).to_have_text("2.4k tokens (2.0k in, 400 out)")
        expect(page.locator("tfoot tr.totals td.cost")).to_have_text("$0.10")

        page.goto(f"{url}/runs/{run_id}")
        spent = page.locator("#spent")
        expect(spent).to_contain_text("$0.10 · 2.4k tokens (2.0k in, 400 out) over 2 agent run(s)")
        expect(spent).to_contain_text("$1.90 left of $2.00")
        steps = page.locator("#cost tr.agent-step")
        expect(steps).to_have_count(2)
        expect(steps.nth(0)).to_contain_text("research.1")
        expect(steps.nth(0).locator("td.cost")).to_have_text("$0.05")
        expect(steps.nth(1)).to_contain_text("specify.1")
        expect(page.locator("#run-total td.cost")).to_have_text("$0.10")
        expect(page.locator("#budget")).to_contain_text("$1.90")

        # The timeline: what happened is shown, the bookkeeping folded until a fold is opened.
        timeline = page.locator("#timeline")
        expect(timeline.locator('tr[data-event="SPEC_CREATED"]')).to_be_visible()
        expect(timeline.locator('tr[data-event="AGENT_USAGE"]').first).to_contain_text("$0.05")
        folds = timeline.locator("details.fold")
        assert folds.count() >= 2
        first = folds.first
        expect(first).not_to_have_attribute("open", "")
        folded = first.locator("tr.ev").first
        expect(folded).to_be_hidden()
        summary = first.locator("summary").first
        expect(summary).to_contain_text("bookkeeping event")
        summary.click()
        expect(first).to_have_attribute("open", "")
        expect(folded).to_be_visible()
        lease_rows = timeline.locator('tr[data-event="LEASE_ACQUIRED"]')
        assert lease_rows.count() >= 1
        run_png = tmp_path / "dashboard-cost.png"
        page.screenshot(path=str(run_png), full_page=True)
        print(f"\nscreenshot: {run_png}")
    finally:
        context.close()
        stop(server)
