/* A board's score format in the browser, the same as scores/formats.py on the server:
 * "integer" (12,345), "duration_ms" (4:41.897) or "decimal:N" (1,234.56). The API and the
 * websocket send integers; the page formats them. tests/e2e checks both sides agree.
 * Also the time left on a countdown, as pages/periods.py's countdown() words it (live.js's
 * window reset, countdown.js's tournaments). */
(function () {
  "use strict";
  function group(n) { return n.toLocaleString("en-US"); }
  function pad(n, width) { var s = String(n); while (s.length < width) s = "0" + s; return s; }
  function score(value, format) {
    if (typeof value !== "number" || !isFinite(value)) return value == null ? "" : String(value);
    var sign = value < 0 ? "-" : "";
    var n = Math.abs(Math.trunc(value));
    format = format || "integer";
    if (format === "duration_ms") {
      var ms = n % 1000, seconds = Math.floor(n / 1000);
      var s = seconds % 60, minutes = Math.floor(seconds / 60);
      var m = minutes % 60, hours = Math.floor(minutes / 60);
      if (hours) return sign + group(hours) + ":" + pad(m, 2) + ":" + pad(s, 2) + "." + pad(ms, 3);
      return sign + m + ":" + pad(s, 2) + "." + pad(ms, 3);
    }
    var dec = /^decimal:([1-9])$/.exec(format);
    if (dec) {
      var digits = Number(dec[1]), unit = Math.pow(10, digits);
      return sign + group(Math.floor(n / unit)) + "." + pad(n % unit, digits);
    }
    return sign + group(n);
  }
  // 3 d 4 h, 5 h 12 min 30 s, 4 min 09 s, 9 s
  function countdown(ms) {
    var s = Math.max(0, Math.floor(ms / 1000));
    var d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60), sec = s % 60;
    if (d) return d + " d " + h + " h";
    if (h) return h + " h " + (m < 10 ? "0" : "") + m + " min " + (sec < 10 ? "0" : "") + sec + " s";
    if (m) return m + " min " + (sec < 10 ? "0" : "") + sec + " s";
    return sec + " s";
  }
  window.LeaderboardFormat = {score: score, countdown: countdown};
})();
