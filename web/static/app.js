// gitaso status page. Plain JavaScript, no framework, no build step; it reads
// the JSON API under api/v1 (relative URLs, so a path prefix added by a
// reverse proxy keeps working). Data is always inserted with textContent,
// never as HTML. The API never sends secret values; the bearer token for
// POST api/v1/sync and api/v1/approve is kept in the `token` variable only
// (never in the URL, cookies or web storage). Those POSTs send
// Content-Type: application/json, which the API requires of them (a page of
// another origin cannot send it without a CORS preflight).
'use strict';

(function () {
  const REFRESH_MS = 5000;
  const MAX_ROWS = 1000;
  const RUNS_LIMIT = 50;
  const KNOWN_AFTER_APPLY = '(known after apply)';
  const REDACTED = '(sensitive value)';

  // token is the bearer token the user typed for the POST endpoints. Memory only.
  let token = null;
  // afterToken is the action to retry once the user has given a token.
  let afterToken = null;
  const HELD_SHOWN = 10; // keys and unmanaged IDs listed in the held banner

  const cache = {
    resources: null, resourcesKey: '', resourcesText: '',
    runs: null, runsText: '', heldText: '',
    plan: undefined, planText: '', // undefined: not loaded; null: no plan yet (404)
    detailText: '',
  };
  const seen = { namespaces: new Set(), kinds: new Set() };
  let route = { view: 'resources', params: new URLSearchParams() };
  let timer = 0;
  let inFlight = null;
  let lastOK = null;

  const $ = (id) => document.getElementById(id);

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    if (attrs) {
      for (const [k, v] of Object.entries(attrs)) {
        if (v === undefined || v === null || v === false) continue;
        if (k === 'class') e.className = v;
        else if (k === 'text') e.textContent = v;
        else e.setAttribute(k, v === true ? '' : String(v));
      }
    }
    for (const c of children) {
      if (c === undefined || c === null || c === false) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  // ---- API ------------------------------------------------------------

  class APIError extends Error {
    constructor(status, code, message) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }

  async function api(path, init) {
    const resp = await fetch(path, Object.assign({
      headers: { Accept: 'application/json' },
      cache: 'no-store',
      credentials: 'same-origin',
      redirect: 'error',
    }, init || {}));
    const text = await resp.text();
    if (!resp.ok) {
      let code = 'http_' + resp.status;
      let message = resp.status + ' ' + resp.statusText;
      try {
        const body = JSON.parse(text);
        if (body && body.error) {
          code = body.error.code || code;
          message = body.error.message || message;
        }
      } catch (_) { /* not JSON */ }
      throw new APIError(resp.status, code, message);
    }
    return text;
  }

  // post sends a JSON body to a mutating endpoint with the token, if any.
  function post(path, body) {
    const headers = { Accept: 'application/json', 'Content-Type': 'application/json' };
    if (token) headers.Authorization = 'Bearer ' + token;
    return api(path, { method: 'POST', headers, body: JSON.stringify(body || {}) });
  }

  // parseJSON keeps number literals whose text a JavaScript number would
  // change (1e21, 1.50, integers beyond 2^53) as raw JSON, the way Go's
  // json.Number keeps them, where the browser supports JSON.rawJSON.
  const rawJSON = typeof JSON.rawJSON === 'function' && typeof JSON.isRawJSON === 'function';
  const isRaw = (x) => rawJSON && x !== null && typeof x === 'object' && JSON.isRawJSON(x);
  function parseJSON(text) {
    if (!rawJSON) return JSON.parse(text);
    return JSON.parse(text, (k, v, ctx) =>
      (typeof v === 'number' && ctx && typeof ctx.source === 'string' && ctx.source !== String(v)) ? JSON.rawJSON(ctx.source) : v);
  }

  // ---- formatting -----------------------------------------------------

  function shortRev(rev) {
    if (!rev) return '';
    return rev.length > 12 && !rev.startsWith('dir-') ? rev.slice(0, 12) : rev;
  }

  function validTime(s) {
    if (!s || s.startsWith('0001-01-01')) return null;
    const d = new Date(s);
    return isNaN(d.getTime()) ? null : d;
  }

  function ago(d) {
    const s = Math.round((Date.now() - d.getTime()) / 1000);
    if (s < 0) return d.toLocaleString();
    if (s < 60) return s + ' s ago';
    if (s < 3600) return Math.floor(s / 60) + ' min ago';
    if (s < 86400) return Math.floor(s / 3600) + ' h ago';
    return d.toLocaleString();
  }

  function timeEl(s) {
    const d = validTime(s);
    if (!d) return el('span', { class: 'muted', text: '—' });
    return el('time', { datetime: d.toISOString(), title: d.toISOString(), text: ago(d) });
  }

  function duration(start, end) {
    const a = validTime(start), b = validTime(end);
    if (!a) return '';
    if (!b) return 'running';
    const ms = b - a;
    if (ms < 1000) return ms + ' ms';
    if (ms < 60000) return (ms / 1000).toFixed(1) + ' s';
    return Math.floor(ms / 60000) + ' min ' + Math.round((ms % 60000) / 1000) + ' s';
  }

  function readyStatus(c) {
    const s = c && c.status;
    return s === 'True' || s === 'False' ? s : 'Unknown';
  }

  function readyBadge(c) {
    const s = readyStatus(c);
    const label = { True: 'Ready', False: 'Not ready', Unknown: 'Unknown' }[s];
    const sev = s === 'False' && c.severity ? c.severity : '';
    const cls = 'badge ready-' + s.toLowerCase() + (sev ? ' sev-' + sev.toLowerCase() : '');
    const icon = { True: '✓', False: '✗', Unknown: '?' }[s];
    return el('span', { class: cls }, el('span', { 'aria-hidden': 'true', text: icon + ' ' }), label + (sev ? ' (' + sev + ')' : ''));
  }

  function resourcePath(r) {
    return [r.namespace, r.group, r.kind, r.name].map(encodeURIComponent).join('/');
  }

  // ---- plan rendering, line for line as planner.RenderText ---------------

  const SYMBOLS = { 'no-op': ' ', create: '+', adopt: '+', update: '~', drift: '~', delete: '-', detach: '-', observe: '?', move: '>' };
  const VERBS = {
    'no-op': 'is up to date',
    create: 'will be created',
    adopt: 'exists in Azure and will be adopted',
    update: 'will be updated in place',
    drift: 'has drifted in Azure and will be corrected',
    delete: 'will be deleted',
    detach: 'will be forgotten (left in Azure)',
    observe: 'will be read only (reconcile-policy skip)',
    move: 'is moved here and keeps its Azure resource',
  };

  // goJSON is Go's json.Marshal: map keys sorted, <, >, & and U+2028/9 escaped.
  function goJSON(v) {
    if (v === undefined) return 'null';
    // Serialise objects by hand: rebuilding a sorted object would put
    // integer-like keys first again.
    const enc = (x) => {
      if (isRaw(x)) return x.rawJSON;
      if (Array.isArray(x)) return '[' + x.map(enc).join(',') + ']';
      if (x && typeof x === 'object') {
        return '{' + Object.keys(x).sort().map((k) => JSON.stringify(k) + ':' + enc(x[k])).join(',') + '}';
      }
      return JSON.stringify(x === undefined ? null : x);
    };
    return enc(v).replace(/[<>&\u2028\u2029]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
  }

  // goQuote is Go's strconv.Quote for the strings a plan contains.
  function goQuote(s) {
    let out = '"';
    for (const ch of String(s)) {
      const c = ch.codePointAt(0);
      switch (ch) {
        case '"': out += '\\"'; continue;
        case '\\': out += '\\\\'; continue;
        case '\x07': out += '\\a'; continue;
        case '\b': out += '\\b'; continue;
        case '\f': out += '\\f'; continue;
        case '\n': out += '\\n'; continue;
        case '\r': out += '\\r'; continue;
        case '\t': out += '\\t'; continue;
        case '\v': out += '\\v'; continue;
      }
      if (c < 0x20 || c === 0x7f) out += '\\x' + c.toString(16).padStart(2, '0');
      else out += ch;
    }
    return out + '"';
  }

  function escapePointer(k) {
    return k.replace(/~/g, '~0').replace(/\//g, '~1');
  }

  function leaves(v, path, fn) {
    if (isRaw(v)) {
      fn(path, v);
    } else if (Array.isArray(v)) {
      if (v.length === 0) { fn(path, v); return; }
      v.forEach((e, i) => leaves(e, path + '/' + i, fn));
    } else if (v && typeof v === 'object') {
      const keys = Object.keys(v).sort();
      if (keys.length === 0) { fn(path, v); return; }
      for (const k of keys) leaves(v[k], path + '/' + escapePointer(k), fn);
    } else {
      fn(path, v);
    }
  }

  function show(v, r, path) {
    if ((r.knownAfterApply || []).includes(path)) return KNOWN_AFTER_APPLY;
    if (v === REDACTED) return REDACTED;
    return goJSON(v);
  }

  // originText reads a plan resource's origin as the CLI prints it.
  function originText(o) {
    const p = [];
    if (o.helmRelease) p.push('HelmRelease ' + o.helmRelease);
    if (o.chart) p.push('chart ' + o.chart);
    if (o.template) p.push('template ' + o.template);
    if (o.kustomization) p.push('Kustomization ' + o.kustomization);
    return p.join(', ');
  }

  // planResourceLines renders one resource of the plan.
  function planResourceLines(r) {
    const L = [];
    const id = r.namespace + '/' + r.kind + '/' + r.name;
    L.push('');
    L.push('  # ' + id + ' ' + (VERBS[r.action] || r.action) + (r.reason ? ' (' + r.reason + ')' : ''));
    L.push('  ' + (SYMBOLS[r.action] || '?') + ' ' + r.group + '/' + r.version + ' ' + r.kind + ' ' + goQuote(r.namespace + '/' + r.name) + ' {');
    L.push('      armId      = ' + goQuote(r.armId || ''));
    if (r.file) L.push('      source     = ' + goQuote(r.file + (r.line > 0 ? ':' + r.line : '')));
    if (r.origin) L.push('      origin     = ' + goQuote(originText(r.origin)));
    if (r.credential && r.credential !== 'global') L.push('      credential = ' + goQuote(r.credential));
    if (r.movedFrom) L.push('      movedFrom  = ' + goQuote(r.movedFrom));
    if (r.deletedWith) L.push('      # deleted together with ' + r.deletedWith);
    const req = r.request;
    if (req && req.method !== 'PUT') L.push('      ' + req.method + ' ' + req.path);
    switch (r.action) {
      case 'create':
        if (req) {
          L.push('      PUT ' + req.path);
          if (req.body !== undefined) leaves(req.body, '', (p, v) => L.push('      + ' + p + ' = ' + show(v, r, p)));
        }
        break;
      case 'adopt': case 'update': case 'drift': case 'move': {
        if (req) L.push('      PUT ' + req.path);
        const changes = r.changes || [];
        for (const c of changes) {
          if (c.sensitive) L.push('      ~ ' + c.path + ' = ' + REDACTED);
          else if (c.op === 'add') L.push('      + ' + c.path + ' = ' + show(c.after, r, c.path));
          else if (c.op === 'remove') L.push('      - ' + c.path + ' = ' + show(c.before, r, c.path));
          else L.push('      ~ ' + c.path + ' = ' + show(c.before, r, c.path) + ' -> ' + show(c.after, r, c.path));
        }
        if (changes.length === 0) for (const u of r.knownAfterApply || []) L.push('      ~ ' + u + ' = ' + KNOWN_AFTER_APPLY);
        break;
      }
    }
    L.push('    }');
    return L;
  }

  function planSummary(p) {
    const s = {};
    for (const r of p.resources || []) s[r.action] = (s[r.action] || 0) + 1;
    return (a) => s[a] || 0;
  }

  // heldLines is planner's renderHeld: why the plan is held, the unmanaged
  // resources its deletions would take, and how to approve them.
  function heldLines(p) {
    const h = p.held;
    if (!h) return [];
    const L = ['', 'HELD (' + (h.reason || '') + '): ' + (h.message || '')];
    const SHOW = 20;
    const un = h.unmanaged || [];
    for (let i = 0; i < un.length; i++) {
      if (i === SHOW) {
        L.push('  ... and ' + (un.length - SHOW) + ' more not managed by gitaso');
        break;
      }
      L.push('  not managed by gitaso: ' + un[i]);
    }
    L.push('Approve exactly these deletions with: POST /api/v1/approve {"revision":' + goQuote(p.revision || '') +
      '} (gitaso serve), or gitaso apply --approve-deletions');
    return L;
  }

  // planLines is planner.RenderText(p, TextOptions{ShowUnchanged}) as lines.
  function planLines(p, showUnchanged) {
    const L = ['gitaso plan for revision ' + shortRev(p.revision || '')];
    L.push(...heldLines(p));
    let changed = 0;
    for (const r of p.resources || []) {
      if (r.action === 'no-op' && !showUnchanged) continue;
      changed++;
      L.push(...planResourceLines(r));
    }
    const s = planSummary(p);
    L.push('');
    if (changed === 0) {
      L.push('No changes. Azure matches the manifests (' + s('no-op') + ' resources).');
    } else {
      L.push('Plan: ' + s('create') + ' to create, ' + s('adopt') + ' to adopt, ' + (s('move') ? s('move') + ' to move, ' : '') +
        s('update') + ' to update, ' + s('drift') + ' drifted to correct, ' + s('delete') + ' to delete, ' + s('detach') + ' to detach; ' +
        s('no-op') + ' unchanged, ' + s('observe') + ' observed.');
      if (p.held) L.push('Held: nothing of this revision is applied until its deletions are approved.');
    }
    return L;
  }

  function lineClass(line) {
    if (/^ {2}# /.test(line)) return 'pl-head';
    if (/^ {2}[+~\-?>] /.test(line)) return 'pl-res pl-' + { '+': 'add', '~': 'change', '-': 'remove', '?': 'observe', '>': 'move' }[line[2]];
    if (/^ {6}\+ /.test(line)) return 'pl-add';
    if (/^ {6}~ /.test(line)) return 'pl-change';
    if (/^ {6}- /.test(line)) return 'pl-remove';
    if (/^ {6}# /.test(line)) return 'pl-note';
    if (/^(Plan:|No changes\.|gitaso plan)/.test(line)) return 'pl-summary';
    if (/^(HELD |Held: |Approve exactly )/.test(line)) return 'pl-held';
    if (/^ {2}(not managed by gitaso: |\.\.\. and \d+ more not managed)/.test(line)) return 'pl-held pl-unmanaged';
    return '';
  }

  // fillPlan writes lines into a <pre>; its textContent is exactly the CLI text.
  function fillPlan(pre, lines) {
    const frag = document.createDocumentFragment();
    for (const line of lines) {
      const span = el('span', { class: ('pl ' + lineClass(line)).trim() });
      // Mark "(known after apply)" and "(sensitive value)" inside the line.
      const parts = line.split(/(\(known after apply\)|\(sensitive value\))/);
      for (const part of parts) {
        if (part === KNOWN_AFTER_APPLY) span.append(el('span', { class: 'kaa', text: part }));
        else if (part === REDACTED) span.append(el('span', { class: 'redacted', text: part }));
        else if (part) span.append(part);
      }
      span.append('\n');
      frag.append(span);
    }
    pre.replaceChildren(frag);
  }

  // ---- routing --------------------------------------------------------

  function parseHash() {
    const h = location.hash.slice(1);
    const q = h.indexOf('?');
    const head = q >= 0 ? h.slice(0, q) : h;
    const params = new URLSearchParams(q >= 0 ? h.slice(q + 1) : '');
    const parts = head.split('/');
    if (parts[0] === 'resource' && parts.length === 5) {
      return { view: 'detail', params, key: parts.slice(1).map(decodeURIComponent) };
    }
    if (parts[0] === 'runs' || parts[0] === 'plan') return { view: parts[0], params };
    return { view: 'resources', params };
  }

  function filtersFromRoute() {
    const p = route.params;
    return { namespace: p.get('namespace') || '', kind: p.get('kind') || '', ready: (p.get('ready') || '').toLowerCase(), name: p.get('name') || '' };
  }

  function filterHash(f) {
    const p = new URLSearchParams();
    for (const k of ['namespace', 'kind', 'ready', 'name']) if (f[k]) p.set(k, f[k]);
    const s = p.toString();
    return '#resources' + (s ? '?' + s : '');
  }

  function showView(name) {
    for (const v of ['resources', 'detail', 'runs', 'plan']) $('view-' + v).hidden = v !== name;
    for (const a of document.querySelectorAll('nav.tabs a')) {
      const active = a.dataset.view === name || (name === 'detail' && a.dataset.view === 'resources');
      if (active) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
    }
  }

  function onRoute() {
    route = parseHash();
    showView(route.view);
    const f = filtersFromRoute();
    $('f-namespace').value = f.namespace;
    $('f-kind').value = f.kind;
    $('f-ready').value = ['true', 'false', 'unknown'].includes(f.ready) ? f.ready : '';
    $('f-name').value = f.name;
    document.title = { resources: 'Resources', detail: 'Resource', runs: 'Runs', plan: 'Plan' }[route.view] + ' · gitaso';
    cache.detailText = '';
    if (route.view === 'detail') {
      $('h-detail').textContent = route.key[2] + ' ' + route.key[3];
      $('detail-body').replaceChildren(el('p', { class: 'muted', text: 'Loading…' }));
    }
    refresh(true);
  }

  // ---- views ----------------------------------------------------------

  async function loadResources() {
    const f = filtersFromRoute();
    const q = new URLSearchParams();
    if (f.namespace) q.set('namespace', f.namespace);
    if (f.kind) q.set('kind', f.kind);
    if (['true', 'false', 'unknown'].includes(f.ready)) q.set('ready', f.ready);
    const key = q.toString();
    const text = await api('api/v1/resources' + (key ? '?' + key : ''));
    if (text === cache.resourcesText && key === cache.resourcesKey && cache.resources) {
      renderResources(false);
      return;
    }
    cache.resourcesText = text;
    cache.resourcesKey = key;
    cache.resources = JSON.parse(text).items || [];
    for (const r of cache.resources) {
      seen.namespaces.add(r.namespace);
      seen.kinds.add(r.kind);
      seen.kinds.add(r.group + '/' + r.kind);
    }
    fillDatalist($('namespaces'), seen.namespaces);
    fillDatalist($('kinds'), seen.kinds);
    renderResources(true);
  }

  function fillDatalist(dl, set) {
    if (dl.childElementCount === set.size) return;
    dl.replaceChildren(...[...set].sort().map((v) => el('option', { value: v })));
  }

  function renderResources(changed) {
    const all = cache.resources || [];
    const name = filtersFromRoute().name.toLowerCase();
    const items = name ? all.filter((r) => r.name.toLowerCase().includes(name)) : all;
    const tbody = $('resources-body');
    // Times are relative, so re-render on every refresh; keep focus.
    const focusKey = tbody.contains(document.activeElement) ? document.activeElement.dataset.key : null;
    const rows = items.slice(0, MAX_ROWS).map(resourceRow);
    tbody.replaceChildren(...rows);
    if (focusKey) {
      const a = tbody.querySelector('a[data-key="' + CSS.escape(focusKey) + '"]');
      if (a) a.focus();
    }
    const counts = { True: 0, False: 0, Unknown: 0 };
    for (const r of items) counts[readyStatus(r.ready)]++;
    const cap = $('resources-caption');
    cap.textContent = items.length > MAX_ROWS
      ? 'Managed resources: showing ' + MAX_ROWS + ' of ' + items.length + '; narrow the list with the filters'
      : 'Managed resources (' + items.length + ')';
    $('count-resources').textContent = String(items.length);
    const sum = $('ready-summary');
    if (changed || sum.childElementCount === 0 || sum.dataset.counts !== JSON.stringify(counts)) {
      sum.dataset.counts = JSON.stringify(counts);
      const f = filtersFromRoute();
      sum.replaceChildren(...['True', 'False', 'Unknown'].map((s) => {
        const link = el('a', { href: filterHash(Object.assign({}, f, { ready: s.toLowerCase() })), class: 'sumlink' },
          readyBadge({ status: s }), ' ', el('strong', { text: String(counts[s]) }));
        return link;
      }));
    }
    const empty = $('resources-empty');
    empty.hidden = items.length > 0;
    const anyFilter = Object.values(filtersFromRoute()).some(Boolean);
    empty.textContent = anyFilter ? 'No resource matches these filters.' : 'gitaso manages no resources yet.';
  }

  function resourceRow(r) {
    const st = readyStatus(r.ready);
    const key = resourcePath(r);
    const c = r.ready || {};
    const readyCell = el('td', { class: 'ready' }, readyBadge(c));
    if (c.reason) readyCell.append(' ', el('span', { class: 'reason', text: c.reason }));
    if (c.message) readyCell.append(el('div', { class: 'message', text: c.message }));
    return el('tr', { class: 'row-' + st.toLowerCase(), 'data-key': r.namespace + '/' + r.group + '/' + r.kind + '/' + r.name },
      el('td', { text: r.namespace }),
      el('td', { title: r.group + '/' + r.version }, r.kind, el('div', { class: 'group', text: r.group })),
      el('th', { scope: 'row', class: 'name' }, el('a', { href: '#resource/' + key, 'data-key': key, text: r.name })),
      readyCell,
      el('td', { class: 'armid' }, r.armId ? el('code', { text: r.armId }) : el('span', { class: 'muted', text: '—' })),
      el('td', { class: 'rev', title: r.revision || '' }, el('code', { text: shortRev(r.revision) })),
      el('td', { class: 'time' }, timeEl(r.updatedAt)));
  }

  async function loadDetail() {
    const k = route.key;
    const path = 'api/v1/resources/' + k.map(encodeURIComponent).join('/');
    let text;
    try {
      text = await api(path);
    } catch (e) {
      if (e instanceof APIError && e.status === 404) {
        $('detail-body').replaceChildren(el('p', { class: 'empty', text: 'gitaso does not manage ' + k.join('/') + ' (any more): ' + e.message }));
        return;
      }
      throw e;
    }
    if (cache.plan === undefined) await loadPlanData().catch(() => {});
    const planned = cache.plan && (cache.plan.resources || []).find((p) => p.namespace === k[0] && p.group === k[1] && p.kind === k[2] && p.name === k[3]);
    const sig = text + '\n' + (planned ? JSON.stringify(planned) : '');
    if (sig === cache.detailText) {
      for (const t of $('detail-body').querySelectorAll('time')) t.textContent = ago(new Date(t.getAttribute('datetime')));
      return;
    }
    cache.detailText = sig;
    renderDetail(parseJSON(text), planned);
  }

  function dl(pairs) {
    const d = el('dl', { class: 'props' });
    for (const [k, v] of pairs) {
      if (v === undefined || v === null || v === '') continue;
      d.append(el('dt', { text: k }), el('dd', null, v));
    }
    return d;
  }

  function renderDetail(r, planned) {
    $('h-detail').textContent = r.kind + ' ' + r.name;
    const c = r.ready || {};
    const body = [];
    body.push(el('p', { class: 'lead' }, 'In namespace ', el('strong', { text: r.namespace }), ', ', el('code', { text: r.group + '/' + (r.version || '') })));

    const cond = el('section', { class: 'card cond cond-' + readyStatus(c).toLowerCase(), 'aria-labelledby': 'h-cond' },
      el('h3', { id: 'h-cond', text: 'Ready condition' }),
      dl([
        ['Status', readyBadge(c)],
        ['Severity', c.severity],
        ['Reason', c.reason],
        ['Message', c.message ? el('span', { class: 'message', text: c.message }) : ''],
        ['Observed generation', c.observedGeneration ? String(c.observedGeneration) : ''],
        ['Last transition', validTime(c.lastTransitionTime) ? timeEl(c.lastTransitionTime) : ''],
      ]));
    body.push(cond);

    body.push(el('section', { class: 'card', 'aria-labelledby': 'h-props' },
      el('h3', { id: 'h-props', text: 'Resource' }),
      dl([
        ['ARM ID', r.armId ? el('code', { class: 'armid', text: r.armId }) : ''],
        ['API version', r.apiVersion],
        ['Source file', r.file ? el('code', { text: r.file }) : ''],
        ['Rendered by', r.origin || ''],
        ['Credential', r.credential],
        ['Reconcile policy', r.policy],
        ['Generation', r.generation ? String(r.generation) : ''],
        ['Revision', r.revision ? el('code', { title: r.revision, text: r.revision }) : ''],
        ['Updated', timeEl(r.updatedAt)],
      ])));

    const outs = Object.keys(r.outputs || {}).sort();
    const outSec = el('section', { class: 'card', 'aria-labelledby': 'h-outputs' }, el('h3', { id: 'h-outputs', text: 'Outputs' }));
    if (outs.length === 0) outSec.append(el('p', { class: 'muted', text: 'No config map outputs.' }));
    else {
      outSec.append(el('table', { class: 'grid small' },
        el('caption', { class: 'sr-only', text: 'Exported config map values' }),
        el('thead', null, el('tr', null, el('th', { scope: 'col', text: 'Config map / key' }), el('th', { scope: 'col', text: 'Value' }))),
        el('tbody', null, ...outs.map((k) => el('tr', null, el('th', { scope: 'row' }, el('code', { text: k })), el('td', null, el('code', { text: r.outputs[k] })))))));
    }
    body.push(outSec);

    const secs = (r.secretOutputs || []).slice().sort();
    const secSec = el('section', { class: 'card', 'aria-labelledby': 'h-secrets' }, el('h3', { id: 'h-secrets', text: 'Secret outputs' }));
    if (secs.length === 0) secSec.append(el('p', { class: 'muted', text: 'No secret outputs.' }));
    else {
      secSec.append(el('p', { class: 'muted', text: 'Values are kept encrypted in gitaso\'s state and never shown.' }),
        el('ul', { class: 'secrets' }, ...secs.map((k) => el('li', null, el('code', { text: k }), ' ', el('span', { class: 'redacted', text: '(value hidden)' })))));
    }
    body.push(secSec);

    if (planned) {
      const pre = el('pre', { class: 'plan', tabindex: '0', 'aria-label': 'Latest plan for this resource' });
      fillPlan(pre, planResourceLines(planned).slice(1));
      body.push(el('section', { class: 'card wide', 'aria-labelledby': 'h-planned' },
        el('h3', { id: 'h-planned', text: 'In the latest plan: ' + planned.action }), pre));
    }

    const applied = el('section', { class: 'card wide', 'aria-labelledby': 'h-body' }, el('h3', { id: 'h-body', text: 'Applied body' }));
    if (r.appliedBody === undefined || r.appliedBody === null) applied.append(el('p', { class: 'muted', text: 'Nothing applied yet.' }));
    else {
      applied.append(el('p', { class: 'muted', text: 'The ARM body last sent, secret values redacted.' }),
        el('pre', { class: 'json', tabindex: '0', 'aria-label': 'Applied body (JSON)', text: JSON.stringify(r.appliedBody, null, 2) }));
    }
    body.push(applied);
    $('detail-body').replaceChildren(...body);
  }

  async function loadRuns() {
    const text = await api('api/v1/runs?limit=' + RUNS_LIMIT);
    cache.runsText = text;
    cache.runs = JSON.parse(text).items || [];
    renderRuns();
  }

  function countsText(counts) {
    const keys = Object.keys(counts || {}).filter((k) => counts[k]).sort();
    return keys.map((k) => counts[k] + ' ' + k).join(', ');
  }

  function renderRuns() {
    const runs = cache.runs || [];
    $('runs-body').replaceChildren(...runs.map((r) => el('tr', { class: 'outcome-' + (r.outcome || 'running') },
      el('th', { scope: 'row', text: String(r.id) }),
      el('td', { title: r.revision }, el('code', { text: shortRev(r.revision) })),
      el('td', { text: r.trigger || '' }),
      el('td', null, timeEl(r.startedAt)),
      el('td', { text: duration(r.startedAt, r.finishedAt) }),
      el('td', null, el('span', { class: 'badge outcome ' + (r.outcome || 'running'), text: r.outcome || 'running' })),
      el('td', { text: countsText(r.counts) }),
      el('td', { class: 'error' }, r.error ? el('div', { class: 'message', text: r.error }) : null, heldNote(r),
        r.summary ? el('div', { class: 'muted', text: r.summary }) : null))));
    $('runs-empty').hidden = runs.length > 0;
  }

  // heldNote says in the runs table what a run held back.
  function heldNote(r) {
    const h = r.held;
    if (!h) return null;
    const what = r.outcome === 'held'
      ? 'Held (' + h.reason + '): ' + deletionCount(h) + ' wait for an approval.'
      : 'Held back (' + h.reason + '): ' + deletionCount(h) + ' not applied.';
    return el('div', { class: 'held-note' }, el('strong', { text: what }), h.message ? el('div', { class: 'message', text: h.message }) : null);
  }

  function plural(n, one, many) {
    return n + ' ' + (n === 1 ? one : many);
  }

  function deletionCount(h) {
    return plural(h.deletions || 0, 'deletion', 'deletions') + ' of ' + plural(h.managed || 0, 'managed resource', 'managed resources');
  }

  // ---- held revision banner ---------------------------------------------

  // renderHeld shows the banner when the newest finished run is held.
  function renderHeld(finished, newest) {
    const box = $('held');
    const h = finished && finished.outcome === 'held' ? finished.held : null;
    const running = !!(h && newest && newest.id !== finished.id && !newest.outcome);
    const sig = h ? JSON.stringify([finished.id, finished.revision, h, running]) : '';
    if (sig === cache.heldText) return;
    cache.heldText = sig;
    if (!h) {
      box.hidden = true;
      box.replaceChildren();
      return;
    }
    const rev = finished.revision || '';
    const list = (items, cls) => {
      const ul = el('ul', { class: cls });
      for (const k of items.slice(0, HELD_SHOWN)) ul.append(el('li', null, el('code', { text: k })));
      if (items.length > HELD_SHOWN) ul.append(el('li', { class: 'muted', text: 'and ' + (items.length - HELD_SHOWN) + ' more' }));
      return ul;
    };
    const keys = h.keys || [];
    const unmanaged = h.unmanaged || [];
    const parts = [
      el('h2', { id: 'held-title' }, 'Revision ', el('code', { title: rev, text: shortRev(rev) }), ' is held: its deletions wait for an approval'),
      el('p', null, el('span', { class: 'reason', text: h.reason || '' }), ' ', el('span', { class: 'message', text: h.message || '' })),
      el('p', { class: 'held-count' }, el('strong', { text: deletionCount(h) }), '. Nothing of this revision is applied until they are approved.'),
    ];
    if (keys.length) parts.push(el('p', { class: 'held-label', text: 'Would delete:' }), list(keys, 'held-keys'));
    if (unmanaged.length) {
      parts.push(el('p', { class: 'held-label', text: 'Would also delete, through Azure\'s cascade, resources gitaso does not manage:' }),
        list(unmanaged, 'held-unmanaged'));
    }
    if (running) parts.push(el('p', { class: 'muted', text: 'A newer run is in progress.' }));
    const btn = el('button', { type: 'button', id: 'approve', class: 'danger', 'data-revision': rev }, 'Approve deletions');
    btn.addEventListener('click', () => confirmApprove(rev, h));
    parts.push(el('p', { class: 'held-actions' }, btn, ' ',
      el('span', { class: 'muted', text: 'or revert the commit that removed them.' })));
    box.replaceChildren(...parts);
    box.hidden = false;
  }

  // ---- refused revision banner ------------------------------------------

  // renderRefused shows the banner when the newest finished run refused its
  // revision: which revision, its errors, and the revision that stays applied.
  function renderRefused(finished, applied) {
    const box = $('refused');
    const refused = finished && finished.outcome === 'refused' ? finished : null;
    const sig = refused ? JSON.stringify([refused.id, refused.revision, refused.error, applied]) : '';
    if (sig === cache.refusedText) return;
    cache.refusedText = sig;
    if (!refused) {
      box.hidden = true;
      box.replaceChildren();
      return;
    }
    const rev = refused.revision || '';
    const lines = (refused.error || '').split('\n').map((l) => l.trim()).filter(Boolean);
    const ul = el('ul', { class: 'refused-errors' });
    for (const l of lines.slice(0, HELD_SHOWN)) ul.append(el('li', null, el('code', { text: l })));
    if (lines.length > HELD_SHOWN) ul.append(el('li', { class: 'muted', text: 'and ' + (lines.length - HELD_SHOWN) + ' more lines (Runs)' }));
    box.replaceChildren(
      el('h2', { id: 'refused-title' }, 'Revision ', el('code', { title: rev, text: rev ? shortRev(rev) : '(unknown)' }),
        ' is refused: nothing of it is applied'),
      el('p', null, applied
        ? el('span', null, 'Revision ', el('code', { title: applied, text: shortRev(applied) }), ' stays applied and is still reconciled.')
        : el('span', { text: 'No revision has been applied yet.' })),
      ul,
      el('p', { class: 'muted', text: 'Fix the errors and commit; the next poll plans the new revision.' }));
    box.hidden = false;
  }

  function confirmApprove(rev, h) {
    const d = $('approve-dialog');
    $('approve-what').textContent = 'Delete ' + plural(h.deletions || 0, 'resource', 'resources') + ' of revision ' + shortRev(rev) +
      ' from Azure' + ((h.unmanaged || []).length ? ', with ' + plural(h.unmanaged.length, 'resource', 'resources') + ' gitaso does not manage' : '') +
      '? Only the deletions listed are approved; a later revision that deletes more is held again.';
    d.dataset.revision = rev;
    if (!d.open) d.showModal();
    $('approve-cancel').focus();
  }

  async function approve(rev) {
    say('Approving the deletions of revision ' + shortRev(rev) + '…');
    const btn = $('approve');
    if (btn) btn.disabled = true;
    try {
      await post('api/v1/approve', { revision: rev });
      say('Deletions of revision ' + shortRev(rev) + ' approved: gitaso is applying it. The new run appears under Runs when it finishes.');
      setTimeout(() => refresh(true), 1000);
    } catch (e) {
      if (e instanceof APIError && e.status === 401) {
        needToken(() => approve(rev), 'approve deletions');
      } else if (e instanceof APIError && e.status === 409) {
        say('Not approved: ' + e.message);
      } else {
        say('Approve failed: ' + e.message);
      }
    } finally {
      if (btn) btn.disabled = false;
    }
  }

  async function loadPlanData() {
    let text;
    try {
      text = await api('api/v1/plan');
    } catch (e) {
      if (e instanceof APIError && e.status === 404) {
        cache.plan = null;
        cache.planText = '';
        return;
      }
      throw e;
    }
    if (text !== cache.planText || cache.plan === undefined) {
      cache.planText = text;
      cache.plan = parseJSON(text);
    }
  }

  let renderedPlan = '';
  async function loadPlan() {
    await loadPlanData();
    renderPlan();
  }

  function renderPlan() {
    const pre = $('plan-text');
    const empty = $('plan-empty');
    const p = cache.plan;
    if (!p) {
      pre.hidden = true;
      empty.hidden = false;
      empty.textContent = 'No plan yet: the first reconcile has not finished planning.';
      $('count-plan').textContent = '';
      renderedPlan = '';
      return;
    }
    const sig = cache.planText + '|' + $('plan-unchanged').checked;
    const changes = (p.resources || []).filter((r) => r.action !== 'no-op' && r.action !== 'observe').length;
    $('count-plan').textContent = changes ? String(changes) : '';
    pre.hidden = false;
    empty.hidden = true;
    if (sig === renderedPlan) return;
    renderedPlan = sig;
    fillPlan(pre, planLines(p, $('plan-unchanged').checked));
  }

  // loadLastRuns returns the newest run and the newest finished one (one
  // run at a time: at most one is in progress).
  async function loadLastRuns() {
    let runs = route.view === 'runs' && cache.runs ? cache.runs : null;
    let applied = cache.applied || '';
    if (!runs) {
      const doc = JSON.parse(await api('api/v1/runs?limit=2'));
      runs = doc.items || [];
      applied = cache.applied = doc.applied || '';
    }
    return { newest: runs[0], finished: runs.find((r) => r.outcome), applied };
  }

  // ---- refresh loop ---------------------------------------------------

  function setAlert(msg) {
    const a = $('alert');
    if (!msg) { a.hidden = true; a.textContent = ''; return; }
    a.hidden = false;
    a.textContent = msg;
  }

  function say(msg) {
    $('status').textContent = msg;
  }

  async function doRefresh() {
    const jobs = [];
    if (route.view === 'resources') jobs.push(loadResources());
    if (route.view === 'detail') jobs.push(loadDetail());
    if (route.view === 'runs') jobs.push(loadRuns());
    if (route.view === 'plan') jobs.push(loadPlan());
    await Promise.all(jobs);
    const runs = await loadLastRuns();
    const last = runs.newest;
    renderHeld(runs.finished, runs.newest);
    renderRefused(runs.finished, runs.applied);
    lastOK = new Date();
    const r = $('refreshed');
    r.replaceChildren('Updated ' + lastOK.toLocaleTimeString());
    if (last) {
      r.append(' · last run ', el('a', { href: '#runs', text: '#' + last.id }), ' ',
        el('span', { class: 'badge outcome ' + (last.outcome || 'running'), text: last.outcome || 'running' }), ' ', timeEl(last.startedAt));
    } else {
      r.append(' · no run yet');
    }
  }

  function refresh(now) {
    clearTimeout(timer);
    if (inFlight && !now) return inFlight;
    const p = doRefresh().then(() => setAlert(''), (e) => {
      setAlert((e instanceof APIError ? 'gitaso\'s API answered: ' : 'Cannot reach gitaso\'s API: ') + e.message +
        (lastOK ? ' (showing data from ' + lastOK.toLocaleTimeString() + ')' : ''));
    }).finally(() => {
      if (inFlight === p) inFlight = null;
      schedule();
    });
    inFlight = p;
    return p;
  }

  function schedule() {
    clearTimeout(timer);
    if ($('autorefresh').checked && !document.hidden) timer = setTimeout(() => refresh(false), REFRESH_MS);
  }

  // ---- sync -----------------------------------------------------------

  async function sync() {
    const btn = $('sync');
    btn.disabled = true;
    btn.setAttribute('aria-busy', 'true');
    say('Triggering a sync…');
    try {
      await post('api/v1/sync', {});
      say('Sync triggered: gitaso is reconciling. The new run appears under Runs when it finishes.');
      setTimeout(() => refresh(true), 1000);
    } catch (e) {
      if (e instanceof APIError && e.status === 401) {
        needToken(sync, 'sync');
      } else {
        say('Sync failed: ' + e.message);
      }
    } finally {
      btn.disabled = false;
      btn.removeAttribute('aria-busy');
    }
  }

  // needToken asks for the token after a 401 and retries action with it.
  function needToken(action, what) {
    const rejected = token !== null;
    token = null;
    afterToken = action;
    say(rejected ? 'The token was rejected.' : 'A bearer token is required to ' + what + '.');
    askToken(rejected, what);
  }

  function askToken(rejected, what) {
    const d = $('token-dialog');
    $('token-why').textContent = (rejected ? 'The token was rejected; try again. ' : 'This gitaso requires a bearer token to ' + what + '. ') +
      'The token is kept in this tab\'s memory only.';
    $('token-input').value = '';
    if (!d.open) d.showModal();
    $('token-input').focus();
  }

  function wire() {
    $('sync').addEventListener('click', sync);
    $('token-form').addEventListener('submit', (ev) => {
      ev.preventDefault(); // never submit the form: the token must not reach a URL
      const v = $('token-input').value.trim();
      $('token-input').value = '';
      $('token-dialog').close();
      if (!v) return;
      token = v;
      const action = afterToken || sync;
      afterToken = null;
      (action === sync || !$('approve') ? $('sync') : $('approve')).focus();
      action();
    });
    $('token-cancel').addEventListener('click', () => {
      const action = afterToken;
      afterToken = null;
      $('token-input').value = '';
      $('token-dialog').close();
      say(action && action !== sync ? 'Cancelled.' : 'Sync cancelled.');
      (action && action !== sync && $('approve') ? $('approve') : $('sync')).focus();
    });
    $('approve-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      const d = $('approve-dialog');
      d.close();
      approve(d.dataset.revision);
    });
    $('approve-cancel').addEventListener('click', () => {
      $('approve-dialog').close();
      say('Nothing approved.');
      if ($('approve')) $('approve').focus();
    });
    $('filters').addEventListener('submit', (ev) => {
      ev.preventDefault();
      const h = filterHash({
        namespace: $('f-namespace').value.trim(), kind: $('f-kind').value.trim(),
        ready: $('f-ready').value, name: $('f-name').value.trim(),
      });
      if (h === location.hash) refresh(true); else location.hash = h;
    });
    $('f-ready').addEventListener('change', () => $('filters').requestSubmit());
    $('f-clear').addEventListener('click', () => { location.hash = '#resources'; });
    $('f-name').addEventListener('input', () => {
      // Client-side filter: no refetch, and no history entry per keystroke.
      const f = filtersFromRoute();
      f.name = $('f-name').value.trim();
      history.replaceState(null, '', filterHash(f));
      route = parseHash();
      renderResources(false);
    });
    $('plan-unchanged').addEventListener('change', renderPlan);
    $('autorefresh').addEventListener('change', () => ($('autorefresh').checked ? refresh(true) : clearTimeout(timer)));
    document.addEventListener('visibilitychange', () => { if (!document.hidden) refresh(true); else clearTimeout(timer); });
    window.addEventListener('hashchange', () => {
      onRoute();
      if (route.view === 'detail') $('h-detail').focus();
    });
  }

  function start() {
    wire();
    onRoute();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
