// scorekit's labelling page. The sample is read from the JSON block above and put in the page
// with textContent only: no text of a story, question or ending is ever parsed as HTML.
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('sample-data').textContent);
  var items = data.items;
  var total = items.length;
  // Every answer lives in this browser's storage under the sample's sha256, written at once.
  var KEY = 'scorekit-labels:' + data.sample;
  var FOLLOWS = 'follows', NOT = 'not', SKIP = 'skip';

  function $(id) { return document.getElementById(id); }

  function itemKey(questionId, ending) { return questionId + '\u0000' + String(ending).trim(); }
  var byKey = {};
  items.forEach(function (it, i) { byKey[itemKey(it.question_id, it.ending)] = i; });

  function fresh() { return { answers: {}, position: 0, labeller: '' }; }
  function load() {
    var s = fresh();
    try {
      var saved = JSON.parse(window.localStorage.getItem(KEY) || 'null');
      if (saved && typeof saved === 'object') {
        if (saved.answers && typeof saved.answers === 'object') s.answers = saved.answers;
        if (typeof saved.position === 'number') s.position = Math.max(0, Math.min(total, saved.position | 0));
        if (typeof saved.labeller === 'string') s.labeller = saved.labeller;
      }
    } catch (e) {
      // Unreadable storage: start empty, and say so below when saving fails too.
    }
    return s;
  }
  var state = load();
  var storageOk = true;
  function save() {
    try {
      window.localStorage.setItem(KEY, JSON.stringify(state));
      storageOk = true;
    } catch (e) {
      storageOk = false;
      say('This browser does not keep the answers (storage: ' + e.name + '): export before closing the page.', true);
    }
  }

  function say(text, error) {
    var m = $('message');
    m.textContent = text;
    m.className = error ? 'error' : '';
  }

  function counts() {
    var c = { follows: 0, not: 0, skip: 0 };
    for (var i = 0; i < total; i++) {
      var a = state.answers[i];
      if (a === FOLLOWS) c.follows++; else if (a === NOT) c.not++; else if (a === SKIP) c.skip++;
    }
    c.labelled = c.follows + c.not;
    c.left = total - c.labelled;
    return c;
  }

  var ANSWER_TEXT = {};
  ANSWER_TEXT[FOLLOWS] = 'Your answer: follows';
  ANSWER_TEXT[NOT] = 'Your answer: does not follow';
  ANSWER_TEXT[SKIP] = 'Skipped';
  var ANSWER_CLASS = {};
  ANSWER_CLASS[FOLLOWS] = 'yes';
  ANSWER_CLASS[NOT] = 'no';
  ANSWER_CLASS[SKIP] = 'skip';

  function render() {
    var c = counts();
    $('progress').value = c.labelled;
    $('count').textContent = c.labelled + ' of ' + total + ' labelled, ' + c.left + ' left' +
      (c.skip ? ' (' + c.skip + ' skipped)' : '');
    var done = state.position >= total;
    $('item').hidden = done;
    $('done').hidden = !done;
    $('prev').disabled = state.position <= 0;
    $('next').disabled = done;
    ['yes', 'no', 'skip'].forEach(function (id) { $(id).disabled = done; });
    if (done) {
      $('done-count').textContent = c.follows + ' follow, ' + c.not + ' do not follow, ' +
        c.skip + ' skipped, ' + (total - c.labelled - c.skip) + ' not answered.';
    } else {
      var it = items[state.position];
      $('position').textContent = 'Ending ' + (state.position + 1) + ' of ' + total;
      $('passage').textContent = it.passage;
      $('question').textContent = it.question;
      $('ending').textContent = it.ending;
      var a = state.answers[state.position];
      var ans = $('answer');
      ans.textContent = ANSWER_TEXT[a] || '';
      ans.className = 'answer ' + (ANSWER_CLASS[a] || '');
      $('yes').classList.toggle('chosen', a === FOLLOWS);
      $('no').classList.toggle('chosen', a === NOT);
      $('skip').classList.toggle('chosen', a === SKIP);
    }
  }

  function go(position) {
    state.position = Math.max(0, Math.min(total, position));
    save();
    render();
  }

  function answer(value) {
    if (state.position >= total) return;
    state.answers[state.position] = value;
    go(state.position + 1);
  }

  // The export: one line per ending answered follows / does not follow, in the sample's order,
  // in the `--calibration-labels` format: question_id, ending, follows, labeller, sample.
  function exportText(labeller) {
    if (typeof labeller !== 'string' || labeller.trim() === '') {
      throw new Error('scorekitExport: name the labeller (a non-empty string)');
    }
    var who = labeller.trim();
    var lines = [];
    for (var i = 0; i < total; i++) {
      var a = state.answers[i];
      if (a !== FOLLOWS && a !== NOT) continue;
      lines.push(JSON.stringify({
        question_id: items[i].question_id,
        ending: items[i].ending,
        follows: a === FOLLOWS,
        labeller: who,
        sample: data.sample
      }));
    }
    return lines.map(function (l) { return l + '\n'; }).join('');
  }
  window.scorekitExport = exportText;

  function fileName(labeller) {
    var safe = labeller.trim().replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^[._]+/, '');
    return 'labels-' + (safe || 'labeller') + '.jsonl';
  }

  function download() {
    var who = $('labeller').value.trim();
    if (!who) {
      say('Your name first (it goes on every exported line as "labeller"): type it and export again.', true);
      $('labeller').focus();
      return;
    }
    var text = exportText(who);
    var blob = new Blob([text], { type: 'application/x-ndjson' });
    var a = document.createElement('a');
    a.href = URL.createObjectURL(blob);
    a.download = fileName(who);
    document.body.appendChild(a);
    a.click();
    document.body.removeChild(a);
    setTimeout(function () { URL.revokeObjectURL(a.href); }, 1000);
    var c = counts();
    say('Exported ' + c.labelled + ' label(s) to ' + a.download + '.', false);
  }

  // An earlier export of this sample, loaded to continue: its answers replace the ones here.
  function importText(text) {
    var lines = text.split(/\r?\n/);
    var loaded = 0;
    var answers = {};
    var labeller = null;
    for (var n = 0; n < lines.length; n++) {
      if (lines[n].trim() === '') continue;
      var v;
      try { v = JSON.parse(lines[n]); } catch (e) {
        throw new Error('line ' + (n + 1) + ': not JSON (' + e.message + ')');
      }
      if (!v || typeof v !== 'object') throw new Error('line ' + (n + 1) + ': not a JSON object');
      if (v.sample !== data.sample) {
        throw new Error('line ' + (n + 1) + ': field "sample" is ' + JSON.stringify(v.sample) +
          ', not this page\'s sample ' + data.sample);
      }
      if (typeof v.follows !== 'boolean') {
        throw new Error('line ' + (n + 1) + ': field "follows" is not true or false');
      }
      var i = byKey[itemKey(v.question_id, v.ending)];
      if (i === undefined) {
        throw new Error('line ' + (n + 1) + ': field "ending": not an ending of this sample');
      }
      answers[i] = v.follows ? FOLLOWS : NOT;
      if (typeof v.labeller === 'string' && v.labeller.trim()) labeller = v.labeller.trim();
      loaded++;
    }
    // Nothing changes unless the whole file is good.
    Object.keys(answers).forEach(function (i) { state.answers[i] = answers[i]; });
    if (labeller && !state.labeller) {
      state.labeller = labeller;
      $('labeller').value = labeller;
    }
    var next = 0;
    while (next < total && state.answers[next] !== undefined) next++;
    state.position = next;
    save();
    render();
    return loaded;
  }
  window.scorekitImport = importText;

  $('import').addEventListener('click', function () { $('import-file').click(); });
  $('import-file').addEventListener('change', function (e) {
    var f = e.target.files && e.target.files[0];
    if (!f) return;
    var reader = new FileReader();
    reader.onload = function () {
      try {
        var n = importText(String(reader.result));
        say('Imported ' + n + ' label(s) from ' + f.name + '.', false);
      } catch (err) {
        say('Not imported: ' + f.name + ', ' + err.message, true);
      }
      e.target.value = '';
    };
    reader.onerror = function () { say('Not imported: cannot read ' + f.name, true); };
    reader.readAsText(f);
  });
  $('export').addEventListener('click', download);
  $('yes').addEventListener('click', function () { answer(FOLLOWS); });
  $('no').addEventListener('click', function () { answer(NOT); });
  $('skip').addEventListener('click', function () { answer(SKIP); });
  $('prev').addEventListener('click', function () { go(state.position - 1); });
  $('next').addEventListener('click', function () { go(state.position + 1); });
  $('labeller').value = state.labeller;
  $('labeller').addEventListener('input', function (e) {
    state.labeller = e.target.value;
    save();
  });

  document.addEventListener('keydown', function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    var t = e.target;
    if (t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.isContentEditable)) return;
    var key = e.key.length === 1 ? e.key.toLowerCase() : e.key;
    var keys = {
      f: function () { answer(FOLLOWS); },
      n: function () { answer(NOT); },
      s: function () { answer(SKIP); },
      ArrowLeft: function () { go(state.position - 1); },
      ArrowRight: function () { go(state.position + 1); }
    };
    var act = Object.prototype.hasOwnProperty.call(keys, key) ? keys[key] : null;
    if (act) {
      e.preventDefault();
      act();
    }
  });

  render();
  if (total === 0) say('This sample has no ending to label.', true);
})();
