"use strict";
// scorekit report.html: the item browsers. Data comes from the page's
// JSON data blocks through JSON.parse and reaches the page only as
// textContent of elements made here (never as markup), so text from a model or a dataset
// shows as text.
(function () {
  var PAGE = 50;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function shown(v) {
    if (v === null || v === undefined) return "";
    if (Array.isArray(v)) return v.map(shown).join(", ");
    if (typeof v === "object") return JSON.stringify(v);
    if (typeof v === "number" && !Number.isInteger(v)) return String(Math.round(v * 10000) / 10000);
    return String(v);
  }
  function mintGroup(it) {
    var f = it.feedback_model === "None" ? "no feedback" : "feedback " + it.feedback_model + " (" + it.feedback_setting + ")";
    return "k=" + it.k + ", " + f;
  }
  function museVerdict(it) {
    if (it.missing_plan) return "no plan";
    if (it.plan_error) return "plan error";
    return ["TS", "FoT", "O"].map(function (m) { return m + (it[m.toLowerCase()] ? " ✓" : " ✗"); }).join(" ");
  }
  function storyVerdict(it) {
    if (it.status !== "scored") return it.status;
    if (it.follow === true) return "follows";
    if (it.follow === false) return "does not follow";
    return "not judged";
  }

  var LETTERS = "ABCDEFGHIJ";
  function letterOf(i) {
    return i === null || i === undefined ? "none" : LETTERS.charAt(i) || String(i);
  }
  function judgeVerdict(it) {
    if (it.pick === null || it.pick === undefined) return "no pick";
    return it.correct ? "correct" : "wrong";
  }

  // Per suite: the columns of the table and what the model, verdict and group filters read.
  var SPECS = {
    story: {
      columns: ["row", "model", "question_id", "status", "verdict", "judge_pick", "gold_label", "dissimilarity_mean"],
      model: function (it) { return it.model !== undefined ? it.model : it.group; },
      verdict: storyVerdict,
      group: function (it) { return it.group; },
      detail: storyDetail,
      text: function (it, data) { return ((data.texts || {}).endings || {})[String(it.line)] || ""; }
    },
    grasp: {
      columns: ["row", "model", "scene", "test", "gt", "parsed", "verdict", "video_file"],
      model: function (it) { return it.label !== undefined ? it.label : it.model; },
      verdict: function (it) { return it.verdict; },
      group: function (it) { return it.test; },
      detail: graspDetail,
      text: function (it, data) { return graspText(it, data).join(" "); }
    },
    muse: {
      columns: ["idx", "modality", "domains", "gold_tasks", "predicted_tasks", "verdict"],
      model: function () { return undefined; },
      verdict: museVerdict,
      group: function (it) { return (it.domains || []).join(", "); },
      detail: museDetail
    },
    mint: {
      columns: ["agent", "task_type", "task", "task_id", "k", "feedback_model", "turns", "verdict", "terminate_reason"],
      model: function (it) { return it.agent; },
      verdict: function (it) {
        var ok = it.rechecked !== null && it.rechecked !== undefined ? it.rechecked : it.success;
        return ok ? "success" : "failure";
      },
      group: mintGroup,
      detail: mintDetail
    },
    "judge-eval": {
      columns: ["line", "question_id", "gold", "pick", "verdict", "cyclic_pick", "agreement", "letter_mass"],
      model: function () { return undefined; },
      verdict: judgeVerdict,
      group: function (it) { return it.passage_id; },
      cell: {
        gold: function (it) { return letterOf(it.gold); },
        pick: function (it) { return letterOf(it.pick); },
        // Under --option-orders cyclic: the majority over rotations and the share that agrees.
        cyclic_pick: function (it) { return it.cyclic ? letterOf(it.cyclic.pick) + (it.cyclic.correct ? " ✓" : " ✗") : undefined; },
        agreement: function (it) { return it.cyclic ? it.cyclic.agreement : undefined; }
      },
      detail: judgeDetail,
      text: function (it, data) {
        var q = ((data.texts || {}).questions || {})[it.question_id];
        return q ? [q.passage, q.question].concat(q.options || []).join(" ") : "";
      }
    },
    calibration: {
      columns: ["row", "question_id", "kind", "slot", "gold", "pick", "counted"],
      model: function () { return undefined; },
      verdict: function (it) { return it.counted ? "counted" : "not counted"; },
      group: function (it) { return it.kind; },
      detail: calibrationDetail
    }
  };

  function genericSpec(items) {
    var cols = [];
    if (items.length) {
      Object.keys(items[0]).forEach(function (k) {
        var v = items[0][k];
        if (cols.length < 8 && (v === null || typeof v !== "object")) cols.push(k);
      });
    }
    return {
      columns: cols,
      model: function (it) { return it.model; },
      verdict: function (it) { return it.verdict; },
      group: function (it) { return it.group; },
      detail: null
    };
  }

  function cell(spec, it, col) {
    if (col === "verdict") return spec.verdict(it);
    if (col === "model") return spec.model(it);
    if (spec.cell && spec.cell[col]) return spec.cell[col](it);
    return it[col];
  }

  function fieldTable(it) {
    var t = el("table", "fields");
    Object.keys(it).forEach(function (k) {
      var tr = el("tr");
      tr.appendChild(el("th", null, k));
      var td = el("td", "wrap", shown(it[k]));
      tr.appendChild(td);
      t.appendChild(tr);
    });
    return t;
  }

  function para(box, label, text, cls) {
    var p = el("p");
    p.appendChild(el("strong", null, label + ": "));
    p.appendChild(el("span", cls || "text", text));
    box.appendChild(p);
    return p;
  }

  function storyDetail(it, data, box) {
    var texts = data.texts || {};
    var q = (texts.questions || {})[it.question_id];
    var ending = (texts.endings || {})[String(it.line)];
    if (!q) {
      box.appendChild(el("p", "muted", "The question's text is not in the page (its dataset was not found, or the question is unknown)."));
    } else {
      para(box, "Passage", q.passage);
      para(box, "Question", q.question);
    }
    if (ending !== undefined) para(box, "Ending (" + shown(it.model !== undefined ? it.model : it.group) + ")", ending, "text ending");
    if (q && Array.isArray(q.options)) {
      box.appendChild(el("p", null, "Options as the judge saw them (the ending in the gold slot):"));
      var ol = el("ol", "options");
      ol.start = 0;
      q.options.forEach(function (opt, i) {
        var isGold = i === it.gold_label;
        var li = el("li", isGold ? "gold" : null);
        li.appendChild(el("span", "text", isGold && ending !== undefined ? ending : opt));
        if (isGold) li.appendChild(el("span", "tag", ending !== undefined ? "the ending (gold slot)" : "gold"));
        if (it.judge_scores) li.appendChild(el("span", "tag", "score " + shown(it.judge_scores[i])));
        if (it.judge_pick === i) { li.className += " pick"; li.appendChild(el("span", "tag", "judge's pick")); }
        if (it.ending_is_option === i) li.appendChild(el("span", "tag", "same text as the ending"));
        ol.appendChild(li);
      });
      box.appendChild(ol);
    }
    var v = storyVerdict(it);
    para(box, "Verdict", v, v === "follows" ? "ok" : "bad");
  }

  // [prompt, response] of a GRASP item from the page's texts (empty where not found).
  function graspText(it, data) {
    var rows = ((data.texts || {}).rows || {})[it.model !== undefined ? it.model : ""] || {};
    return rows[String(it.row)] || [];
  }

  function graspDetail(it, data, box) {
    var t = graspText(it, data);
    if (t.length) {
      para(box, "Prompt", t[0]);
      para(box, "Response", t[1], "text response");
    } else {
      box.appendChild(el("p", "muted", "The prompt and response are not in the page (the results file was not found as recorded, or the page's share of text was spent)."));
    }
    para(box, "Answer read (normalised)", shown(it.parsed));
    para(box, "Gold", shown(it.gt));
    para(box, "Verdict", it.verdict, it.verdict === "correct" ? "ok" : "bad");
  }

  function museDetail(it, data, box) {
    para(box, "Gold tasks", shown(it.gold_tasks));
    para(box, "Planned tasks", shown(it.predicted_tasks));
    if (it.gold_edges) para(box, "Gold flow", (it.gold_edges || []).map(shown).join("; "));
    if (it.predicted_edges) para(box, "Planned flow", (it.predicted_edges || []).map(shown).join("; "));
    para(box, "Missing / extra tasks", shown(it.missing_tasks) + " / " + shown(it.extra_tasks));
    if (it.violated_dependencies && it.violated_dependencies.length) para(box, "Violated dependencies", (it.violated_dependencies || []).map(shown).join("; "));
    if (it.plan_error) para(box, "Plan error", it.plan_error);
    para(box, "Final output", shown(it.final_outputs) + " (requested: " + shown(it.requested_output) + ")");
    para(box, "Verdict", museVerdict(it));
  }

  function mintDetail(it, data, box) {
    para(box, "Task", it.task + " " + it.task_id + " (" + it.task_type + ")");
    para(box, "Turns", shown(it.turns) + " of k = " + shown(it.k) + ", ended by " + shown(it.terminate_reason));
    para(box, "Verdict", SPECS.mint.verdict(it), SPECS.mint.verdict(it) === "success" ? "ok" : "bad");
    if (it.file) para(box, "Trajectory", it.file + ":" + it.line);
  }

  // A judge eval item: the question with its options (the dataset's order), gold and pick
  // marked, each option's score or letter logit; the answer; every rotation under cyclic orders.
  function judgeDetail(it, data, box) {
    var q = ((data.texts || {}).questions || {})[it.question_id];
    if (q) {
      para(box, "Passage", q.passage);
      para(box, "Question", q.question);
    } else {
      box.appendChild(el("p", "muted", "The question's text is not in the page (the question file was not found at its recorded path with its recorded sha256)."));
    }
    var n = q && Array.isArray(q.options) ? q.options.length : (it.scores || it.letter_logits || []).length;
    var ol = el("ol", "options");
    ol.type = "A";
    for (var i = 0; i < n; i++) {
      var li = el("li", i === it.gold ? "gold" : null);
      li.appendChild(el("span", "text", q && q.options ? q.options[i] : "option " + letterOf(i)));
      if (i === it.gold) li.appendChild(el("span", "tag", "gold"));
      if (it.pick === i) { li.className += " pick"; li.appendChild(el("span", "tag", "judge's pick")); }
      if (it.scores && it.scores.length) li.appendChild(el("span", "tag", "score " + shown(it.scores[i])));
      if (it.letter_logits) li.appendChild(el("span", "tag", "logit " + shown(it.letter_logits[i])));
      if (it.cyclic && it.cyclic.pick === i) li.appendChild(el("span", "tag", "majority over rotations"));
      ol.appendChild(li);
    }
    box.appendChild(el("p", null, "Options (the dataset's order):"));
    box.appendChild(ol);
    if (it.answer !== undefined && it.answer !== null) para(box, "Answer", it.answer, "text");
    if (it.letter_mass !== undefined && it.letter_mass !== null) para(box, "Letter mass (probability of the letters among all tokens)", shown(it.letter_mass));
    var v = judgeVerdict(it);
    para(box, "Verdict", v + " (gold " + letterOf(it.gold) + ", pick " + letterOf(it.pick) + ")", v === "correct" ? "ok" : "bad");
    if (it.cyclic) {
      box.appendChild(el("p", null, "Every rotation of the options (picks mapped back to the dataset's order):"));
      var t = el("table", "fields");
      var hr = el("tr");
      ["rotation", "answer", "pick"].forEach(function (h) { hr.appendChild(el("th", null, h)); });
      t.appendChild(hr);
      (it.cyclic.picks || []).forEach(function (p, r) {
        var tr = el("tr");
        tr.appendChild(el("td", "num", r));
        tr.appendChild(el("td", "wrap", (it.cyclic.answers || [])[r]));
        tr.appendChild(el("td", null, letterOf(p)));
        t.appendChild(tr);
      });
      box.appendChild(t);
      var mv = it.cyclic.correct ? "correct" : "wrong";
      para(box, "Majority", letterOf(it.cyclic.pick) + ", " + mv + ", " + shown(it.cyclic.agreement) + " of the rotations agree", it.cyclic.correct ? "ok" : "bad");
    }
  }

  function calibrationDetail(it, data, box) {
    var q = ((data.texts || {}).questions || {})[it.question_id];
    if (q) {
      para(box, "Passage", q.passage);
      para(box, "Question", q.question);
      var ol = el("ol", "options");
      ol.start = 0;
      // A positive item is the question as the dataset has it, so its scores and pick belong
      // to these options; a negative's are of the options as that item arranged them (in the
      // fields below), not marked here.
      var positive = it.kind === "positive";
      q.options.forEach(function (opt, i) {
        var li = el("li", i === it.gold ? "gold" : null);
        li.appendChild(el("span", "text", opt));
        if (i === it.gold) li.appendChild(el("span", "tag", "gold"));
        if (positive && it.scores) li.appendChild(el("span", "tag", "score " + shown(it.scores[i])));
        if (positive && it.pick === i) { li.className += " pick"; li.appendChild(el("span", "tag", "judge's pick")); }
        ol.appendChild(li);
      });
      box.appendChild(el("p", null, "The dataset's options:"));
      box.appendChild(ol);
    }
  }

  function compareValues(a, b) {
    var na = a === null || a === undefined, nb = b === null || b === undefined;
    if (na || nb) return na === nb ? 0 : na ? 1 : -1;
    if (typeof a === "number" && typeof b === "number") return a - b;
    if (typeof a === "boolean" && typeof b === "boolean") return (a ? 1 : 0) - (b ? 1 : 0);
    a = shown(a); b = shown(b);
    return a < b ? -1 : a > b ? 1 : 0;
  }

  function distinct(rows, f) {
    var seen = {};
    rows.forEach(function (r) { var v = r[f]; if (v !== undefined && v !== null) seen[v] = true; });
    return Object.keys(seen).sort();
  }

  function makeSelect(name, values, onChange) {
    var lab = el("label", null, name + " ");
    var s = el("select");
    s.name = name;
    var all = el("option", null, "all");
    all.value = "";
    s.appendChild(all);
    values.forEach(function (v) { var o = el("option", null, v); o.value = v; s.appendChild(o); });
    s.addEventListener("change", onChange);
    lab.appendChild(s);
    return { label: lab, select: s };
  }

  function mount(box, data, kind) {
    var items = kind === "calibration" ? data.calibration || [] : data.items || [];
    var spec = kind === "calibration" ? SPECS.calibration : SPECS[data.suite] || genericSpec(items);
    // A column no item has (a scoring judge's letter_mass, cyclic columns without rotations)
    // is left out.
    var columns = spec.columns.filter(function (c) {
      if (c === "verdict" || c === "model") return true;
      return items.some(function (it) { var v = cell(spec, it, c); return v !== undefined && v !== null; });
    });
    var rows = items.map(function (it, i) {
      return { i: i, it: it, model: shown(spec.model(it)), verdict: shown(spec.verdict(it)), group: shown(spec.group(it)), hay: null };
    });
    var state = { sort: null, desc: false, page: 0, size: PAGE, selected: -1, filtered: rows };
    var controls = el("div", "controls");
    var filters = {};
    ["model", "verdict", "group"].forEach(function (f) {
      var values = distinct(rows, f).filter(function (v) { return v !== ""; });
      if (values.length < 1) return;
      var s = makeSelect(f, values, function () { state.page = 0; apply(); });
      s.select.className = "filter-" + f;
      filters[f] = s.select;
      controls.appendChild(s.label);
    });
    var search = el("input");
    search.type = "search";
    search.placeholder = "search text";
    search.className = "filter-text";
    search.setAttribute("aria-label", "search text");
    search.addEventListener("input", function () { state.page = 0; apply(); });
    controls.appendChild(search);
    var count = el("span", "count");
    controls.appendChild(count);
    box.appendChild(controls);

    // The list (table and pager) and the selected item's detail beside it.
    var body = el("div", "body");
    var list = el("div", "list");
    body.appendChild(list);
    box.appendChild(body);
    var table = el("table", "items");
    var thead = el("thead");
    var hr = el("tr");
    columns.forEach(function (c) {
      var th = el("th", null, c);
      th.dataset.column = c;
      th.addEventListener("click", function () {
        if (state.sort === c) state.desc = !state.desc; else { state.sort = c; state.desc = false; }
        Array.prototype.forEach.call(hr.children, function (h) { h.classList.remove("sorted-asc", "sorted-desc"); });
        th.classList.add(state.desc ? "sorted-desc" : "sorted-asc");
        state.page = 0;
        apply();
      });
      hr.appendChild(th);
    });
    thead.appendChild(hr);
    table.appendChild(thead);
    var tbody = el("tbody");
    table.appendChild(tbody);
    list.appendChild(table);

    var pager = el("div", "pager");
    var prev = el("button", "prev", "← previous");
    var next = el("button", "next", "next →");
    var where = el("span", "where");
    var size = el("select", "page-size");
    [25, 50, 100, 500].forEach(function (n) { var o = el("option", null, n + " a page"); o.value = n; if (n === PAGE) o.selected = true; size.appendChild(o); });
    prev.addEventListener("click", function () { if (state.page > 0) { state.page--; draw(); } });
    next.addEventListener("click", function () { if ((state.page + 1) * state.size < state.filtered.length) { state.page++; draw(); } });
    size.addEventListener("change", function () { state.size = Number(size.value); state.page = 0; draw(); });
    pager.appendChild(prev); pager.appendChild(where); pager.appendChild(next); pager.appendChild(size);
    list.appendChild(pager);
    var detail = el("div", "detail");
    detail.appendChild(el("p", "muted", "Click an item to see it here."));
    body.appendChild(detail);

    function haystack(r) {
      if (r.hay === null) {
        var extra = spec.text ? spec.text(r.it, data) : "";
        r.hay = (JSON.stringify(r.it) + " " + extra + " " + r.verdict + " " + r.group + " " + r.model).toLowerCase();
      }
      return r.hay;
    }

    function apply() {
      var want = {};
      Object.keys(filters).forEach(function (f) { want[f] = filters[f].value; });
      var text = search.value.trim().toLowerCase();
      var out = rows.filter(function (r) {
        for (var f in want) if (want[f] !== "" && r[f] !== want[f]) return false;
        return text === "" || haystack(r).indexOf(text) >= 0;
      });
      if (state.sort) {
        var c = state.sort, sign = state.desc ? -1 : 1;
        out = out.slice().sort(function (a, b) {
          return sign * compareValues(cell(spec, a.it, c), cell(spec, b.it, c)) || a.i - b.i;
        });
      }
      state.filtered = out;
      draw();
    }

    function draw() {
      var n = state.filtered.length;
      count.textContent = n === rows.length ? n + " items" : n + " of " + rows.length + " items";
      box.dataset.count = String(n);
      var start = state.page * state.size;
      var page = state.filtered.slice(start, start + state.size);
      while (tbody.firstChild) tbody.removeChild(tbody.firstChild);
      page.forEach(function (r) {
        var tr = el("tr");
        tr.dataset.index = String(r.i);
        if (r.i === state.selected) tr.className = "selected";
        columns.forEach(function (c) {
          var v = cell(spec, r.it, c);
          var td = el("td", typeof v === "number" ? "num" : null, shown(v));
          td.title = shown(v);
          tr.appendChild(td);
        });
        tr.addEventListener("click", function () { select(r); });
        tbody.appendChild(tr);
      });
      where.textContent = n === 0 ? "no item" : (start + 1) + "–" + Math.min(start + state.size, n) + " of " + n;
      prev.disabled = state.page === 0;
      next.disabled = start + state.size >= n;
    }

    function select(r) {
      state.selected = r.i;
      Array.prototype.forEach.call(tbody.children, function (tr) {
        tr.className = tr.dataset.index === String(r.i) ? "selected" : "";
      });
      while (detail.firstChild) detail.removeChild(detail.firstChild);
      detail.appendChild(el("h4", null, "Item " + (r.i + 1) + " of " + rows.length));
      if (spec.detail) spec.detail(r.it, data, detail);
      var all = el("details");
      all.open = !spec.detail;
      all.appendChild(el("summary", null, "Every field of the line"));
      all.appendChild(fieldTable(r.it));
      detail.appendChild(all);
    }

    apply();
  }

  // The lines of items.jsonl as the page holds them: a table of columns, strings and rows, a
  // cell being a string's index, [value], or null for a key the line does not have.
  function linesOf(table) {
    if (!table) return null;
    var cols = table.columns, strings = table.strings;
    return table.rows.map(function (row) {
      var o = {};
      for (var i = 0; i < row.length; i++) {
        var c = row[i];
        if (c === null) continue;
        o[cols[i]] = typeof c === "number" ? strings[c] : c[0];
      }
      return o;
    });
  }

  var cache = {};
  function runData(id) {
    if (!(id in cache)) {
      var block = document.getElementById(id + "-data");
      var data = block ? JSON.parse(block.textContent) : { suite: "", items: null, calibration: null, texts: null };
      data.items = linesOf(data.items) || [];
      data.calibration = linesOf(data.calibration);
      cache[id] = data;
    }
    return cache[id];
  }

  // The items are read after the first paint, so that the numbers and charts show at once on
  // a page that holds a large run.
  setTimeout(function () {
    Array.prototype.forEach.call(document.querySelectorAll(".browser"), function (box) {
      mount(box, runData(box.dataset.run), box.dataset.kind);
    });
    // For tests and scripts/bench/report_html.py: the items are drawn, and when (ms since
    // navigation).
    window.scorekitReadyMs = performance.now();
    window.scorekitReady = true;
  }, 0);
})();
