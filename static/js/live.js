/* Live updates for a board page (docs/api.md §9). No build step, no dependencies.
 *
 * The page is complete without this file. Here: one websocket to
 * /ws/games/{game}/boards/{board}/?window=... (the session cookie identifies a signed-in
 * player), then
 *   {"type": "top", "entries": [...]}       -> the first 10 rows of the table (page 1 only)
 *   {"type": "rank", "rank", "score"}       -> the "your rank" card's rank and score at once,
 *                                              then the whole card and the friends' board
 *                                              fetched from the server (?part=rank-card)
 *   {"type": "passed", "by": {...}, "rank"} -> a notice, and the same
 * A dropped connection is retried with exponential backoff (1 s doubling to 30 s, with
 * jitter); the pill next to the title says live / connecting / offline. Scores are shown in
 * the board's format (static/js/format.js); rank changes and passes are announced to screen
 * readers (#announcer, aria-live); the countdown to the window's reset ticks. */
(function () {
  "use strict";
  var root = document.getElementById("board-page");
  if (!root || root.dataset.live !== "1") return;

  var TOP = 10;
  var status = document.getElementById("live-status");
  var tbody = document.getElementById("top-body");
  var me = root.dataset.me || "";
  var windowSpec = root.dataset.window || "all";
  var region = root.dataset.region || "";
  var here = "?window=" + encodeURIComponent(windowSpec) + (region ? "&region=" + encodeURIComponent(region) : "");
  var REFRESH_MS = 1000; // at most one card fetch a second, however many messages arrive
  var url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + root.dataset.ws;
  var backoff = 1000;
  var socket = null;
  var retryTimer = null;
  startCountdown();
  if (!("WebSocket" in window)) return;

  var scoreFormat = root.dataset.format || "integer";
  var subscoreNames = root.dataset.subscores ? root.dataset.subscores.split(",") : [];

  function fmt(n) {
    return typeof n === "number" ? n.toLocaleString("en-US") : String(n == null ? "" : n);
  }

  function fmtScore(n) {
    return window.LeaderboardFormat ? window.LeaderboardFormat.score(n, scoreFormat) : fmt(n);
  }

  function announce(text) {
    var box = document.getElementById("announcer");
    if (box) box.textContent = text;
  }

  function setStatus(state) {
    if (!status) return;
    status.hidden = false;
    status.className = "pill " + state;
    status.textContent = state;
    root.dataset.liveState = state;
  }

  function cell(cls, text) {
    var td = document.createElement("td");
    td.className = cls;
    td.textContent = text;
    return td;
  }

  function row(e) {
    var tr = document.createElement("tr");
    tr.dataset.player = e.player;
    tr.dataset.score = String(e.score);
    var classes = [];
    if (e.player === me) classes.push("me");
    if (e.rank <= 3) classes.push("top", "top-" + e.rank);
    if (classes.length) tr.className = classes.join(" ");
    var rank = cell("rank", fmt(e.rank));
    if (e.rank <= 3) rank.title = ["1st", "2nd", "3rd"][e.rank - 1] + " place";
    if (e.player === me) rank.id = "me";
    tr.appendChild(rank);
    var td = document.createElement("td");
    td.className = "player";
    var a = document.createElement("a");
    a.className = "name";
    a.href = here + "&player=" + encodeURIComponent(e.player);
    a.textContent = e.display_name || e.player;
    td.appendChild(a);
    tr.appendChild(td);
    tr.appendChild(cell("score", fmtScore(e.score)));
    // a board with sub-scores: a column each, in the order the board declares them
    subscoreNames.forEach(function (name) {
      tr.appendChild(cell("subscore", e.subscores ? fmt(e.subscores[name]) : ""));
    });
    return tr;
  }

  function showTop(entries) {
    if (!tbody || root.dataset.page !== "1") return;
    var before = {};
    Array.prototype.forEach.call(tbody.rows, function (tr, i) {
      if (i < TOP) before[tr.dataset.player] = tr.querySelector(".score").textContent + "@" + i;
    });
    var keep = Array.prototype.slice.call(tbody.rows, TOP).filter(function (tr) {
      return !tr.classList.contains("empty");
    });
    var frag = document.createDocumentFragment();
    entries.slice(0, TOP).forEach(function (e, i) {
      var tr = row(e);
      if (before[e.player] !== fmtScore(e.score) + "@" + i) tr.classList.add("flash");
      frag.appendChild(tr);
    });
    keep.forEach(function (tr) { frag.appendChild(tr); });
    tbody.replaceChildren(frag);
  }

  function showRank(rank, score) {
    var card = document.getElementById("my-card");
    var was = card ? [card.dataset.rank, card.dataset.score] : null;
    // the first message after (re)connecting repeats what the page shows: nothing to do
    if (was && was[0] === (rank == null ? "" : String(rank)) && (score == null || was[1] === String(score))) return;
    var r = document.getElementById("my-rank");
    var s = document.getElementById("my-score");
    if (r) r.textContent = rank == null ? "No score in this window yet." : "#" + fmt(rank);
    if (s && score != null) s.textContent = fmtScore(score);
    if (rank == null) announce("You have no score in this window yet.");
    else announce("Your rank is now " + fmt(rank) + (score != null ? ", score " + fmtScore(score) : "") + ".");
    if (score != null) moveMarker(score);
    if (card) {
      card.dataset.rank = rank == null ? "" : String(rank);
      if (score != null) card.dataset.score = String(score);
    }
    // The message carries no percentile or neighbours: the server renders the card again.
    refreshMine();
  }

  // The chart's "you" marker follows the score (the bars are the histogram beat refreshes).
  function moveMarker(score) {
    var line = document.getElementById("my-marker");
    var label = document.getElementById("my-marker-label");
    var svg = line && line.ownerSVGElement;
    if (!svg || !label) return;
    var lo = Number(svg.dataset.lo), hi = Number(svg.dataset.hi), w = Number(svg.dataset.w);
    var inside = score >= lo && score <= hi;
    line.style.display = label.style.display = inside ? "" : "none";
    if (!inside) return;
    var x = ((score - lo + 0.5) / (hi - lo + 1) * w).toFixed(1);
    var right = x > w * 0.7;
    line.setAttribute("x1", x);
    line.setAttribute("x2", x);
    label.setAttribute("x", x);
    label.setAttribute("text-anchor", right ? "end" : "start");
    label.setAttribute("dx", right ? "-4" : "4");
    label.textContent = "you: " + fmtScore(score);
  }

  // The rank card and the friends' board, rendered by the server as on a full page. Bursts
  // coalesce: one fetch in flight at a time, at most one a second; a change meanwhile asks for
  // one more fetch after it (so the last change is always reflected).
  var fetching = false;
  var wanted = false;
  var lastFetch = 0;
  var refreshTimer = null;

  function refreshMine() {
    if (!document.getElementById("my-card")) return;
    wanted = true;
    if (fetching || refreshTimer) return;
    var wait = lastFetch + REFRESH_MS - Date.now();
    if (wait > 0) { refreshTimer = setTimeout(function () { refreshTimer = null; refreshMine(); }, wait); return; }
    wanted = false;
    fetching = true;
    lastFetch = Date.now();
    fetch(location.pathname + here + "&part=rank-card", {credentials: "same-origin", headers: {Accept: "text/html"}})
      .then(function (response) { return response.status === 200 ? response.text() : null; })
      .then(function (html) { if (html) swapMine(html); })
      .catch(function () { /* the next message tries again */ })
      .then(function () {
        fetching = false;
        if (wanted) refreshMine();
      });
  }

  function swapMine(html) {
    var tpl = document.createElement("template");
    tpl.innerHTML = html;
    ["my-card", "friends"].forEach(function (id) {
      var fresh = tpl.content.getElementById(id);
      var old = document.getElementById(id);
      if (fresh && old) old.replaceWith(fresh);
    });
  }

  function notice(text) {
    var box = document.getElementById("notices");
    if (!box) return;
    var div = document.createElement("div");
    div.className = "notice";
    div.setAttribute("role", "status");
    div.textContent = text;
    box.appendChild(div);
    setTimeout(function () { div.remove(); }, 8000);
  }

  function onMessage(event) {
    var msg;
    try { msg = JSON.parse(event.data); } catch (err) { return; }
    if (msg.type === "top" && Array.isArray(msg.entries)) showTop(msg.entries);
    else if (msg.type === "rank") showRank(msg.rank, msg.score);
    else if (msg.type === "passed" && msg.by) {
      var who = msg.by.display_name || msg.by.player;
      var text = who + " passed you" + (msg.rank != null ? ": you are now #" + fmt(msg.rank) : "");
      notice(text);
      announce(text + ".");
      if (msg.rank != null) showRank(msg.rank, null);
      refreshMine(); // the friends' board changed order even if the rank did not
    }
  }

  function connect() {
    retryTimer = null;
    setStatus("connecting");
    try {
      socket = new WebSocket(url);
    } catch (err) {
      retry();
      return;
    }
    socket.onopen = function () {
      backoff = 1000;
      setStatus("live");
    };
    socket.onmessage = onMessage;
    socket.onclose = function () {
      socket = null;
      retry();
    };
    socket.onerror = function () { /* onclose follows and retries */ };
  }

  function retry() {
    setStatus("offline");
    if (retryTimer) return;
    var delay = backoff * (0.75 + Math.random() * 0.5);
    backoff = Math.min(backoff * 2, 30000);
    retryTimer = setTimeout(connect, delay);
  }

  // Back from a sleeping laptop or a hidden tab: try now instead of waiting out the backoff.
  window.addEventListener("online", function () {
    if (!socket && retryTimer) { clearTimeout(retryTimer); backoff = 1000; connect(); }
  });

  // The countdown to the window's reset, in whole seconds; at zero the page offers the new window.
  function startCountdown() {
    var box = document.getElementById("reset");
    var out = document.getElementById("countdown");
    if (!box || !out) return;
    var at = Date.parse(box.dataset.at);
    function tick() {
      var ms = at - Date.now();
      if (ms <= 0) {
        box.textContent = "";
        var a = document.createElement("a");
        a.href = location.pathname + here;
        a.textContent = "This window has ended: open the new one";
        box.appendChild(a);
        return;
      }
      out.textContent = window.LeaderboardFormat.countdown(ms);
      setTimeout(tick, 1000 - (Date.now() % 1000) + 5);
    }
    tick();
  }

  connect();
})();
