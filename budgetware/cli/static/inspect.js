"use strict";
// budgetware inspect: a session's requests, batches, previews and full outputs. Served by
// `budgetware inspect` (the data comes from its API) or written whole by
// `budgetware report --html` (the data is embedded, and no full output is).
(function () {
  const DATA = JSON.parse(document.getElementById("data").textContent);
  const LIVE = DATA === null;
  const ROWS_PER_PAGE = 50;
  const BATCHES_AT_ONCE = 10;
  const LIMIT = 20000; // read_tool_output's default window
  const CONTEXT_BEFORE = 2000; // characters shown above a match jumped to
  // The fields of a request row (budgetware/cli/report.py: table).
  const [T, API, UNIT, BUDGET, BB, BA, SB, SA, RESULTS, CUT, SECS, ERR, INPUT, CACHED, MASKED, STEP] = [
    ...Array(16).keys(),
  ];
  const SVG = "http://www.w3.org/2000/svg";
  const SALIENT = /^\[\.\.\. [\d,]+ [a-z]+ omitted; (\d+) matching lines? from it follows?, with line numbers \.\.\.\]$/;
  const $ = (id) => document.getElementById(id);
  const fmt = (n) => Number(n).toLocaleString("en-US");
  const words = { chars: "chars", utf8_bytes: "bytes" };
  const unitWord = (unit) => words[unit] || "tokens";
  const size = (n, unit) => `${fmt(n)} ${unitWord(unit)}`;

  let session = null;
  let page = 0;
  let selected = -1;
  let output = null; // the full output shown: {ref, offset, total}

  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (key === "class") node.className = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value);
    }
    for (const child of children) {
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function svg(tag, attrs) {
    const node = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
    return node;
  }

  async function api(path, params) {
    const url = new URL(path, location.href);
    for (const [key, value] of Object.entries(params || {})) url.searchParams.set(key, value);
    const response = await fetch(url, { cache: "no-store" });
    const body = await response.json();
    if (!response.ok) throw new Error(body.error || response.statusText);
    return body;
  }

  function expand(runs) {
    const out = [];
    for (const [first, last] of runs) for (let i = first; i <= last; i++) out.push(i);
    return out;
  }

  function clock(seconds) {
    return new Date(seconds * 1000).toTimeString().slice(0, 8);
  }

  function fail(node, error) {
    node.textContent = "";
    node.append(el("span", { class: "error" }, error.message || String(error)));
  }

  // -- the session ---------------------------------------------------------------------

  function renderTotals() {
    const rows = session.requests;
    $("session").textContent = session.session;
    const units = {};
    for (const r of rows) {
      const u = (units[r[UNIT]] = units[r[UNIT]] || [0, 0]);
      u[0] += r[SB];
      u[1] += r[SA];
    }
    const sizes = Object.entries(units).map(([u, [b, a]]) => `${size(b, u)} \u2192 ${fmt(a)}`);
    const bounded = rows.filter((r) => r[CUT]).length;
    const cut = rows.reduce((n, r) => n + r[CUT], 0);
    const processes = `${session.processes} process${session.processes === 1 ? "" : "es"}`;
    let text = `${fmt(rows.length)} requests from ${processes}; ${fmt(bounded)} bounded, ` +
      `${fmt(cut)} tool results cut; tool results ${sizes.join(", ") || "none"}`;
    if (session.stopped) text += `; ${session.stopped} process log(s) stopped at their size limit`;
    if (!LIVE) text += " (written by budgetware report --html: sizes only)";
    $("totals").textContent = text;
  }

  function drawChart() {
    const chart = $("chart");
    chart.textContent = "";
    const rows = session.requests;
    const cached = rows.some((r) => r[INPUT] !== null);
    const width = Math.max(chart.clientWidth || 900, 300);
    const height = 220;
    const left = 70;
    const right = cached ? 70 : 4;
    const bottom = 20;
    const top = 10;
    chart.setAttribute("viewBox", `0 0 ${width} ${height}`);
    const max = rows.reduce((m, r) => Math.max(m, r[SB]), 1);
    const y = (v) => top + (height - top - bottom) * (1 - v / max);
    const step = (width - left - right) / Math.max(rows.length, 1);
    const bar = Math.max(step * 0.8, 0.6);
    const unit = rows.length ? rows[0][UNIT] : "chars";
    for (const v of [0, max / 2, max]) {
      chart.append(svg("line", { x1: left - 4, x2: width - right, y1: y(v), y2: y(v) }));
      const label = svg("text", { x: left - 8, y: y(v) + 4, "text-anchor": "end" });
      label.textContent = v ? fmt(Math.round(v)) : `0 ${unitWord(unit)}`;
      chart.append(label);
    }
    const bars = document.createDocumentFragment();
    rows.forEach((r, i) => {
      const x = left + i * step;
      const group = svg("g", { class: "bar", "data-index": i });
      group.append(svg("rect", { class: "b", x, y: y(r[SB]), width: bar, height: height - bottom - y(r[SB]) }));
      group.append(svg("rect", { class: "a", x, y: y(r[SA]), width: bar, height: height - bottom - y(r[SA]) }));
      const title = svg("title", {});
      title.textContent = `request ${i + 1}: ${size(r[SB], r[UNIT])} \u2192 ${fmt(r[SA])}, ${r[CUT]} of ${r[RESULTS]} cut`;
      group.append(title);
      bars.append(group);
    });
    chart.append(bars);
    // The requests where the history pass took a new step (masked more: a cache miss).
    const stepped = rows.some((r) => r[STEP]);
    for (const node of [$("step-key"), $("step-word")]) node.hidden = !stepped;
    rows.forEach((r, i) => {
      if (!r[STEP]) return;
      const mark = svg("rect", { class: "step", x: left + i * step, y: 0, width: bar, height: 6 });
      const title = svg("title", {});
      title.textContent = `request ${i + 1}: a history step (${fmt(r[MASKED])} results masked)`;
      mark.append(title);
      chart.append(mark);
    });
    // The provider's cache reads, in tokens, on a scale of their own (right).
    for (const node of [$("cache-key"), $("cache-word")]) node.hidden = !cached;
    if (cached) {
      const most = rows.reduce((m, r) => Math.max(m, r[INPUT] || 0), 1);
      const ty = (v) => top + (height - top - bottom) * (1 - v / most);
      for (const v of [most / 2, most]) {
        const label = svg("text", { x: width - right + 8, y: ty(v) + 4 });
        label.textContent = fmt(Math.round(v));
        chart.append(label);
      }
      const label = svg("text", { x: width - right + 8, y: ty(0) + 4 });
      label.textContent = "0 tokens";
      chart.append(label);
      rows.forEach((r, i) => {
        if (r[CACHED] === null) return;
        const dot = svg("circle", { cx: left + i * step + bar / 2, cy: ty(r[CACHED]), r: Math.min(Math.max(bar / 3, 1.5), 4) });
        const title = svg("title", {});
        title.textContent = `request ${i + 1}: ${fmt(r[CACHED])} of ${fmt(r[INPUT])} input tokens read from the provider's cache`;
        dot.append(title);
        chart.append(dot);
      });
    }
    chart.onclick = (event) => {
      const box = chart.getBoundingClientRect();
      const x = ((event.clientX - box.left) * width) / box.width;
      const i = Math.floor((x - left) / step);
      if (i >= 0 && i < rows.length) select(i);
    };
  }

  function renderTable() {
    const rows = session.requests;
    const body = $("requests").tBodies[0];
    body.textContent = "";
    const first = page * ROWS_PER_PAGE;
    for (let i = first; i < Math.min(rows.length, first + ROWS_PER_PAGE); i++) {
      const r = rows[i];
      const row = el(
        "tr",
        { "data-index": i, class: i === selected ? "selected" : "", onclick: () => select(i) },
        el("td", { class: "num" }, i + 1),
        el("td", {}, clock(r[T])),
        el("td", {}, r[API] || "\u2013", r[ERR] ? el("span", { class: "error" }, ` (${r[ERR]})`) : ""),
        el("td", { class: "num" }, size(r[SB], r[UNIT])),
        el("td", { class: "num" }, fmt(r[SA])),
        el("td", { class: r[CUT] ? "num cut" : "num" }, `${r[CUT]} of ${r[RESULTS]}`),
        el("td", { class: "num" }, `${fmt(r[BB])} \u2192 ${fmt(r[BA])}`),
        el("td", { class: "num" }, (r[SECS] * 1000).toFixed(1)),
        el("td", { class: "num" }, r[INPUT] === null ? "\u2013" : `${fmt(r[CACHED])} of ${fmt(r[INPUT])}`),
        el("td", { class: r[STEP] ? "num cut" : "num" }, r[MASKED] === null ? "\u2013" : `${fmt(r[MASKED])}${r[STEP] ? " (new step)" : ""}`),
      );
      body.append(row);
    }
    const pages = Math.max(Math.ceil(rows.length / ROWS_PER_PAGE), 1);
    const nav = $("pages");
    nav.textContent = "";
    if (pages > 1) {
      const go = (p) => () => { page = p; renderTable(); };
      const prev = el("button", { type: "button", onclick: go(page - 1) }, "\u2190");
      const next = el("button", { type: "button", onclick: go(page + 1) }, "\u2192");
      prev.disabled = page === 0;
      next.disabled = page === pages - 1;
      nav.append(prev, ` requests ${first + 1}\u2013${Math.min(first + ROWS_PER_PAGE, rows.length)} of ${fmt(rows.length)} `, next);
    }
  }

  function select(i) {
    selected = i;
    page = Math.floor(i / ROWS_PER_PAGE);
    renderTable();
    for (const g of $("chart").querySelectorAll("g.selected")) g.classList.remove("selected");
    const bar = $("chart").querySelector(`g[data-index="${i}"]`);
    if (bar) bar.classList.add("selected");
    showRequest(i);
  }

  // -- one request ---------------------------------------------------------------------

  async function showRequest(i) {
    const section = $("request-section");
    const r = session.requests[i];
    section.hidden = false;
    let title = `Request ${i + 1}: ${r[API] || "unknown API"}, budget ${size(r[BUDGET], r[UNIT])} per batch`;
    if (r[MASKED]) {
      title += `; the history pass sent ${fmt(r[MASKED])} older result(s) as stubs` +
        (r[STEP] ? " (a new step)" : "") + `, ${size(r[SA], r[UNIT])} in all`;
    }
    $("request-title").textContent = title;
    const box = $("batches");
    const more = $("more-batches");
    box.textContent = "Loading\u2026";
    more.hidden = true;
    let batches;
    try {
      batches = LIVE
        ? (await api("api/request", { r: i })).batches
        : expand(DATA.request_batches[i]).map((k) => DATA.batches[k]);
    } catch (error) {
      fail(box, error);
      return;
    }
    if (selected !== i) return; // another request was chosen meanwhile
    box.textContent = batches.length ? "" : "No tool results in this request.";
    const order = batches.map((_, k) => k).reverse(); // the newest turn first
    let shown = 0;
    const showMore = () => {
      for (const k of order.slice(shown, shown + BATCHES_AT_ONCE)) box.append(batchCard(i, k, batches[k], r));
      shown = Math.min(shown + BATCHES_AT_ONCE, order.length);
      const left = order.length - shown;
      more.hidden = left === 0;
      more.textContent = `show ${Math.min(left, BATCHES_AT_ONCE)} more of ${left} earlier batches`;
    };
    more.onclick = showMore;
    showMore();
    section.scrollIntoView({ block: "start" });
  }

  function batchCard(request, k, batch, r) {
    const cut = batch.results.filter((x) => x.cut).length;
    const head = el(
      "h3",
      {},
      `Batch ${k + 1}`,
      el("span", { class: "meta" },
        ` \u00b7 ${batch.results.length} result(s), ${size(batch.size_before, r[UNIT])} \u2192 ` +
        `${fmt(batch.size_after)}, ${cut} cut`),
    );
    const th = (text, cls) => el("th", cls ? { class: cls } : {}, text);
    const num = (n) => el("td", { class: "num" }, fmt(n));
    const body = el("tbody");
    batch.results.forEach((x, j) => {
      let action = "";
      if (x.refs) {
        action = el("span", {},
          el("button", { type: "button", class: "show-output", onclick: () => showOutput(request, k, j, x, r[UNIT]) }, "show"),
          el("span", { class: "ref" }, x.written ? " written now" : " already stored"));
      } else if (x.cut) {
        action = el("span", { class: "note" }, "not kept");
      }
      body.append(el("tr", {},
        el("td", {}, x.tool || "(unnamed)"), num(x.size), num(x.room), num(x.sent),
        el("td", {}, x.priority || "normal"),
        el("td", { class: x.cut ? "cut" : "" }, x.cut ? "cut" : "whole"),
        el("td", {}, action)));
    });
    const table = el("table", {},
      el("thead", {}, el("tr", {}, th("tool"), th("original size", "num"), th("room", "num"),
        th("sent", "num"), th("priority"), th("cut"), th("full output"))),
      body);
    return el("div", { class: "batch" }, head, table);
  }

  // -- one result: its preview beside its full output ----------------------------------

  async function showOutput(request, batch, index, result, unit) {
    const section = $("output-section");
    section.hidden = false;
    $("output-title").textContent =
      `${result.tool || "(unnamed)"}: ${size(result.size, unit)} sent as ${fmt(result.sent)} ` +
      `(room ${fmt(result.room)})`;
    const note = $("output-note");
    const panes = section.querySelector(".panes");
    if (!LIVE) {
      panes.hidden = true;
      note.className = "note";
      note.textContent = "This file holds sizes only. Previews and full outputs are read from " +
        `the artifact store: run budgetware inspect ${session.session} where the store is.`;
      section.scrollIntoView({ block: "start" });
      return;
    }
    panes.hidden = false;
    note.className = "ref";
    note.textContent = result.refs.join(", ");
    output = { ref: result.refs[0], offset: 0, total: 0 };
    $("matches").textContent = "";
    $("pattern").value = "";
    $("preview").textContent = "Rebuilding the preview from the full output\u2026";
    $("salient").textContent = "";
    section.scrollIntoView({ block: "start" });
    const reading = readAt(0);
    try {
      showPreview(await api("api/preview", { r: request, b: batch, i: index }));
    } catch (error) {
      fail($("preview"), error);
    }
    await reading;
  }

  function showPreview(answer) {
    const pre = $("preview");
    const salient = $("salient");
    pre.textContent = "";
    salient.textContent = "";
    const kept = [];
    answer.previews.forEach((text, slot) => {
      if (answer.previews.length > 1) pre.append(el("strong", {}, `slot ${slot + 1}\n`));
      const lines = text.split("\n");
      const at = lines.findIndex((line) => SALIENT.test(line));
      if (at < 0) {
        pre.append(text + "\n");
        return;
      }
      const count = Number(SALIENT.exec(lines[at])[1]);
      const block = lines.slice(at, at + count + 2);
      for (const line of block.slice(1, count + 1)) {
        const m = /^(\d+): (.*)$/.exec(line);
        if (m) kept.push([Number(m[1]), m[2]]);
      }
      pre.append(lines.slice(0, at).join("\n") + "\n", el("mark", {}, block.join("\n")),
        "\n" + lines.slice(at + count + 2).join("\n") + "\n");
    });
    const block = pre.querySelector("mark");
    pre.scrollTop = block ? Math.max(block.offsetTop - pre.offsetTop - 60, 0) : 0;
    if (!answer.exact) {
      salient.append(el("p", { class: "note" },
        "Rebuilt from the store, but not the size that was sent: the result was itself a " +
        "preview (a producer cut it first), or the settings differ."));
    }
    if (kept.length) {
      salient.append(el("p", {}, `Salient lines kept from the omitted middle (${kept.length}):`));
      const list = el("ul", { id: "salient-lines" });
      for (const [line, text] of kept) {
        list.append(el("li", { onclick: () => jumpToLine(line, text) }, `${line}: ${text}`));
      }
      salient.append(list);
    }
  }

  async function readAt(offset, mark) {
    const pre = $("full");
    let w;
    try {
      w = await api("api/read", { ref: output.ref, offset, limit: LIMIT });
    } catch (error) {
      fail(pre, error);
      return;
    }
    output.offset = w.offset;
    output.total = w.total;
    const end = w.offset + w.text.length;
    $("full-size").textContent = `(${fmt(w.total)} chars)`;
    $("window").textContent = `chars ${fmt(w.offset)}\u2013${fmt(end)} of ${fmt(w.total)}`;
    $("prev").disabled = w.offset <= 0;
    $("next").disabled = end >= w.total;
    pre.textContent = "";
    if (mark && mark.offset >= w.offset && mark.offset < end) {
      const at = mark.offset - w.offset;
      const hit = el("mark", {}, w.text.slice(at, at + mark.length));
      pre.append(w.text.slice(0, at), hit, w.text.slice(at + mark.length));
      pre.scrollTop = Math.max(hit.offsetTop - pre.offsetTop - 60, 0);
    } else {
      pre.append(w.text);
      pre.scrollTop = 0;
    }
  }

  function jump(match) {
    return readAt(Math.max(match.offset - CONTEXT_BEFORE, 0), { offset: match.offset, length: match.text.length });
  }

  async function search(pattern, context) {
    const box = $("matches");
    box.textContent = "Searching\u2026";
    let found;
    try {
      found = await api("api/grep", { ref: output.ref, pattern, context });
    } catch (error) {
      fail(box, error);
      return null;
    }
    box.textContent = "";
    const n = found.matches.length;
    box.append(el("p", {}, `${n} match${n === 1 ? "" : "es"}` + (found.more ? " shown (more follow: narrow the pattern)" : "")));
    for (const m of found.matches) {
      for (const [line, text] of m.before) box.append(el("div", { class: "ctx" }, `${line}- ${text}`));
      box.append(el("div", { class: "hit", onclick: () => jump(m) }, `${m.line}: ${m.text}`));
      for (const [line, text] of m.after) box.append(el("div", { class: "ctx" }, `${line}- ${text}`));
    }
    return found;
  }

  async function jumpToLine(line, text) {
    // The longest piece of the line without regular-expression syntax: a plain search.
    const piece = text.replace(/ \[\.\.\.\]$/, "").split(/[\\^$.|?*+()[\]{}]/).sort((a, b) => b.length - a.length)[0];
    $("pattern").value = piece;
    const found = await search(piece, 0);
    const match = found && found.matches.find((m) => m.line === line);
    if (match) await jump(match);
  }

  $("prev").onclick = () => readAt(Math.max(output.offset - LIMIT, 0));
  $("next").onclick = () => readAt(output.offset + LIMIT);
  $("search").onsubmit = (event) => {
    event.preventDefault();
    const pattern = $("pattern").value;
    if (pattern) search(pattern, $("context").value || 0);
  };

  async function main() {
    try {
      session = LIVE ? await api("api/session") : DATA;
    } catch (error) {
      fail($("totals"), error);
      return;
    }
    renderTotals();
    drawChart();
    renderTable();
    // Milliseconds from the navigation to the page drawn (the browser tests report it).
    document.body.dataset.loadedMs = performance.now().toFixed(1);
  }
  main();
})();
