// jobd dashboard: the few things a server-rendered page cannot do.
// Every page reads without it; it localises times, follows a job's
// progress over its event stream, refreshes the overview's counts from
// one summary endpoint, recolours a running workflow's graph from
// another, and asks before a destructive action.
"use strict";

(function () {
  // Times: the server writes UTC in <time datetime>; show the browser's zone.
  function localise(root) {
    root.querySelectorAll("time[datetime]").forEach(function (el) {
      var d = new Date(el.getAttribute("datetime"));
      if (!isNaN(d)) {
        el.title = d.toISOString();
        el.textContent = d.toLocaleString(undefined, {
          year: "numeric", month: "2-digit", day: "2-digit",
          hour: "2-digit", minute: "2-digit", second: "2-digit",
        });
      }
    });
  }

  // Forms with data-confirm ask first.
  function confirmations() {
    document.addEventListener("submit", function (ev) {
      var btn = ev.submitter;
      var msg = (btn && btn.getAttribute("data-confirm")) || ev.target.getAttribute("data-confirm");
      if (msg && !window.confirm(msg)) {
        ev.preventDefault();
      }
    });
  }

  // The jobs page's "select all" box.
  function selectAll() {
    var all = document.getElementById("select-all");
    if (!all) return;
    all.addEventListener("change", function () {
      document.querySelectorAll('#bulk input[name="id"]').forEach(function (box) {
        box.checked = all.checked;
      });
    });
  }

  // A job's page: follow its stream. Progress is updated in place; the
  // per-item rows come from the server's fragment (one renderer, the
  // page's); a change of state reloads the page, whose buttons, result
  // and journal then change too.
  function followJob() {
    var box = document.getElementById("progress");
    if (!box || !window.EventSource) return;
    var url = box.getAttribute("data-stream");
    if (!url) return;
    var state = box.getAttribute("data-state");
    var cancelRequested = box.getAttribute("data-cancel-requested") === "true";
    var items = box.getAttribute("data-items") || "";
    var es = new EventSource(url);
    // A form sent from the page (cancel, retry) leads to another page:
    // the stream must not reload this one meanwhile.
    var leaving = false;
    document.addEventListener("submit", function (ev) {
      if (!ev.defaultPrevented) {
        leaving = true;
        es.close();
      }
    });
    es.addEventListener("job", function (ev) {
      if (leaving) return;
      var j = JSON.parse(ev.data);
      if (j.state !== state || j.cancel_requested !== cancelRequested) {
        es.close();
        window.location.replace(window.location.pathname);
        return;
      }
      var p = j.progress || {};
      var bar = document.getElementById("progress-bar");
      if (bar) {
        bar.max = p.total > 0 ? p.total : 1;
        bar.value = p.total > 0 ? p.done : 0;
      }
      setText("progress-phase", p.phase || "—");
      setText("progress-done", String(p.done));
      setText("progress-total", String(p.total));
      setText("progress-percent", p.total > 0 ? Math.min(100, Math.max(0, Math.floor(p.done * 100 / p.total))) + "%" : "");
      var now = JSON.stringify(p.items || null);
      if (now !== items) {
        items = now;
        refreshItems(box.getAttribute("data-items-url"));
      }
      box.setAttribute("data-updated", j.updated_at);
    });
    es.addEventListener("error", function () {
      // The stream ends when the job does; EventSource reconnects on
      // its own otherwise.
      if (es.readyState === EventSource.CLOSED) return;
    });
  }

  function refreshItems(url) {
    var target = document.getElementById("items");
    if (!url || !target) return;
    fetch(url, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (html !== null) {
          target.innerHTML = html;
          localise(target);
        }
      })
      .catch(function () {});
  }

  function setText(id, text) {
    var el = document.getElementById(id);
    if (el) el.textContent = text;
  }

  // The overview: one request for every queue's counts, every few
  // seconds while the page is visible. A new or gone queue, or a queue
  // paused or resumed elsewhere, reloads the page.
  function refreshOverview() {
    var table = document.getElementById("queues");
    if (!table) return;
    var url = table.getAttribute("data-summary");
    var period = 5000;
    function tick() {
      if (document.hidden) return;
      fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (d) { if (d) apply(d); })
        .catch(function () {});
    }
    function apply(d) {
      var rows = table.querySelectorAll("tbody tr[data-queue]");
      var queues = d.queues || [];
      if (rows.length !== queues.length) {
        window.location.reload();
        return;
      }
      for (var i = 0; i < queues.length; i++) {
        var q = queues[i];
        var row = rows[i];
        if (row.getAttribute("data-queue") !== q.name ||
            (row.getAttribute("data-paused") === "true") !== q.paused) {
          window.location.reload();
          return;
        }
        row.querySelectorAll("[data-field]").forEach(function (cell) {
          var f = cell.getAttribute("data-field");
          if (f in q && f !== "paused") {
            cell.textContent = q[f] === "" ? "—" : String(q[f]);
          }
        });
      }
      document.querySelectorAll("#facts [data-field]").forEach(function (cell) {
        var f = cell.getAttribute("data-field");
        if (f in d) cell.textContent = String(d[f]);
      });
      var at = document.querySelector("#counts-at time");
      if (at && d.at) {
        at.setAttribute("datetime", d.at);
        localise(at.parentNode);
      }
    }
    setInterval(tick, period);
  }

  // A workflow's page, while it runs: one request for its tasks' states
  // every data-period ms (2 s, more for a large workflow) while the page
  // is visible; each node's class (its
  // colour), the task list's states and the counts change in place.
  // The workflow's own end (or a change of it) reloads the page, whose
  // buttons and journal then change too.
  function followWorkflow() {
    var box = document.getElementById("graph");
    if (!box) return;
    var url = box.getAttribute("data-summary");
    if (!url) return;
    var state = box.getAttribute("data-state");
    var timer = null;
    var leaving = false;
    document.addEventListener("submit", function (ev) {
      if (!ev.defaultPrevented) leaving = true;
    });
    function tick() {
      if (document.hidden || leaving) return;
      fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (d) { if (d && !leaving) apply(d); })
        .catch(function () {});
    }
    function apply(d) {
      var tasks = d.tasks || {};
      box.querySelectorAll("g.node[data-task]").forEach(function (g) {
        var st = tasks[g.getAttribute("data-task")];
        if (!st) return;
        var cls = "node s-" + st;
        if (g.getAttribute("class") !== cls) {
          g.setAttribute("class", cls);
          var title = g.querySelector("title");
          if (title) title.textContent = g.getAttribute("data-ref") + ": " + st;
        }
      });
      document.querySelectorAll("#tasks tr[data-task]").forEach(function (row) {
        var st = tasks[row.getAttribute("data-task")];
        var badge = row.querySelector(".badge");
        if (st && badge && badge.textContent !== st) {
          badge.className = "badge " + st;
          badge.textContent = st;
        }
      });
      var counts = d.counts || {};
      document.querySelectorAll("#counts [data-count]").forEach(function (el) {
        var f = el.getAttribute("data-count");
        if (f in counts) el.textContent = String(counts[f]);
      });
      box.setAttribute("data-updated", d.updated_at);
      if (d.state !== state) {
        clearInterval(timer);
        window.location.replace(window.location.pathname);
      }
    }
    timer = setInterval(tick, Number(box.getAttribute("data-period")) || 2000);
  }

  document.addEventListener("DOMContentLoaded", function () {
    localise(document);
    confirmations();
    selectAll();
    followJob();
    refreshOverview();
    followWorkflow();
  });
})();
