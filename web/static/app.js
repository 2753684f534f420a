// gitaso status page. Plain JavaScript, no framework, no build step; it reads
// the JSON API under api/v1 (relative URLs, so a path prefix added by a
// reverse proxy keeps working). Data is always inserted with textContent,
// never as HTML. The API never sends secret values; the bearer token for
// POST api/v1/sync and api/v1/approve is kept in the `token` variable only
// (never in the URL, cookies or web storage). Those POSTs send
// Content-Type: application/json, which the API requires of them (a page of
// another origin cannot send it without a CORS preflight). A signed-in
// browser (OpenID Connect, the HttpOnly session cookie this script never
// sees) sends its session's CSRF token (api/v1/whoami) as X-CSRF-Token.
'use strict';

(function () {
  const REFRESH_MS = 5000;
  const PAGE = 500; // resources per page of api/v1/resources
  const RUN_ROWS = 1000; // touched resources listed before "show all"
  const RUNS_LIMIT = 50;
  const KNOWN_AFTER_APPLY = '(known after apply)';
  const REDACTED = '(sensitive value)';

  // token is the bearer token the user typed for the POST endpoints. Memory only.
  let token = null;
  // afterToken is the action to retry once the user has given a token.
  let afterToken = null;
  // who is api/v1/whoami's answer: the caller, whether sign-in is on, the
  // session's CSRF token.
  let who = null;
  const HELD_SHOWN = 10; // keys and unmanaged IDs listed in the held banner

  const cache = {
    resources: null, resourcesKey: '', resourcesText: '',
    runs: null, runsText: '', heldText: '',
    plan: undefined, planText: '', // undefined: not loaded; null: no plan yet (404)
    detailText: '',
  };
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
    const opts = Object.assign({
      headers: { Accept: 'application/json' },
      cache: 'no-store',
      credentials: 'same-origin',
      redirect: 'error',
    }, init || {});
    // Where reading needs a caller too, the token the user gave goes with
    // every request.
    if (token && !opts.headers.Authorization) opts.headers = Object.assign({}, opts.headers, { Authorization: 'Bearer ' + token });
    const resp = await fetch(path, opts);
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
    else if (who && who.csrfToken) headers['X-CSRF-Token'] = who.csrfToken;
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

  // ARM_TAIL is how many characters of an ARM ID the list shows: its end,
  // the resource type and name; the full ID is the cell's title, is copied
  // by the copy button and is on the resource's page.
  const ARM_TAIL = 40;
  function armTail(id) {
    const parts = id.split('/');
    if (parts.length <= 3) return id;
    let tail = parts.slice(-2).join('/'); // type and name
    if (tail.length > ARM_TAIL) tail = parts[parts.length - 1]; // the name
    if (tail.length > ARM_TAIL) tail = tail.slice(-ARM_TAIL);
    return tail.length < id.length ? '…/' + tail : id;
  }

  // copyButton copies text to the clipboard (navigator.clipboard, or a
  // selected textarea where the page is not a secure context).
  function copyButton(text, what) {
    const b = el('button', { type: 'button', class: 'copy', title: 'Copy the ' + what, 'aria-label': 'Copy the ' + what }, 'Copy');
    b.addEventListener('click', async () => {
      try {
        if (navigator.clipboard && window.isSecureContext) {
          await navigator.clipboard.writeText(text);
        } else {
          const ta = el('textarea', { class: 'sr-only', readonly: true });
          ta.value = text;
          document.body.append(ta);
          ta.select();
          const ok = document.execCommand('copy');
          ta.remove();
          if (!ok) throw new Error('the browser refused');
        }
        say('Copied the ' + what + '.');
      } catch (e) {
        say('Could not copy the ' + what + ': ' + e.message);
      }
    });
    return b;
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
    if (isSecretLabel(v)) return v;
    if (r.sensitive && Object.hasOwn(r.sensitive, path)) return sensitiveLabel(r, path);
    return goJSON(v);
  }

  // isSecretLabel is manifest.IsSecretLabel: "(sensitive value)" or
  // "(sensitive value from Secret namespace/name)".
  function isSecretLabel(v) {
    return typeof v === 'string' && (v === REDACTED || (v.startsWith('(sensitive value from ') && v.endsWith(')')));
  }

  // sensitiveLabel is planner's: the Secret a substituted value came from.
  function sensitiveLabel(r, path) {
    if (r.sensitive && Object.hasOwn(r.sensitive, path)) return '(sensitive value from ' + r.sensitive[path] + ')';
    return REDACTED;
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
    for (const w of r.warnings || []) L.push('  # warning: ' + w);
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
          if (c.sensitive) L.push('      ~ ' + c.path + ' = ' + sensitiveLabel(r, c.path));
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

  // goShortRevision is planner.ShortRevision: a commit cut to 12
  // characters, the digest of external charts after "+" kept.
  function goShortRevision(rev) {
    if (!rev || rev.startsWith('dir-')) return rev || '';
    const i = rev.indexOf('+');
    const commit = i >= 0 ? rev.slice(0, i) : rev;
    return commit.slice(0, 12) + (i >= 0 ? rev.slice(i) : '');
  }

  // externalLine is planner's: a source outside the repository, '' for a
  // pending one.
  function externalLine(e) {
    const k = e.kind || '';
    if (k === 'Pending' || k === 'PendingConfigMap' || k === 'PendingSecret') return '';
    if (k.startsWith('Exported')) return 'substitute-from ' + k.slice('Exported'.length) + ' ' + e.user + ' (not in the repository: an export or the cluster)';
    return 'chart ' + e.name + '@' + e.version + ' for HelmRelease ' + e.user + ' (' + e.digest + ')';
  }

  // ---- units: planner's unitrender.go ----

  const MAX_UNIT_ERRORS = 20;
  const unitID = (u) => u.kind + '/' + u.namespace + '/' + u.name;
  const unitFailing = (u) => !!(u.ready && u.ready.status === 'False');

  function partialLine(p) {
    const units = p.units || [];
    const failed = units.filter(unitFailing).length;
    if (!failed) return '';
    return 'Partial: ' + failed + ' of ' + units.length + ' ' + (units.length === 1 ? 'unit' : 'units') + ' failed; their objects are kept as last applied';
  }

  function ignoredLine(p) {
    const n = (p.units || []).filter((u) => u.ignored).length;
    if (!n) return '';
    return n === 1 ? '1 release renders no ASO object' : n + ' releases render no ASO object';
  }

  function unitHead(u) {
    const last = u.lastAppliedRevision ? 'last applied ' + goShortRevision(u.lastAppliedRevision) : 'never applied';
    const n = (u.objects || []).length;
    const kept = n === 1 ? ', 1 object kept' : n > 1 ? ', ' + n + ' objects kept' : '';
    return unitID(u) + ' (' + ((u.ready && u.ready.reason) || 'Failed') + '): ' + last + kept;
  }

  // oneLine is Go's strings.Join(strings.Fields(s), " ") after dropping \r.
  function oneLine(s) {
    return String(s).replace(/\r/g, '').split(/[\t\n\v\f \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+/).filter(Boolean).join(' ');
  }

  function unitProblems(u) {
    const out = [];
    const errs = u.errors || [];
    for (let i = 0; i < errs.length; i++) {
      if (i === MAX_UNIT_ERRORS) {
        out.push('... and ' + (errs.length - MAX_UNIT_ERRORS) + ' more errors');
        break;
      }
      out.push(oneLine(errs[i]));
    }
    if (!out.length && u.ready && u.ready.message) out.push(oneLine(u.ready.message));
    return out;
  }

  function unitLines(p) {
    const L = [];
    const ign = ignoredLine(p);
    if (ign) L.push('  ' + ign);
    const head = partialLine(p);
    if (!head) return L;
    L.push('', head);
    for (const u of (p.units || []).filter(unitFailing)) {
      L.push('  ' + unitHead(u));
      for (const line of unitProblems(u)) L.push('      ' + line);
    }
    return L;
  }

  const PARTIAL_FOOTER = 'Partial: the units that failed keep their objects as last applied until they render again.';

  // planLines is planner.RenderText(p, TextOptions{ShowUnchanged}) as lines.
  function planLines(p, showUnchanged) {
    const L = ['gitaso plan for revision ' + goShortRevision(p.revision || '')];
    for (const e of p.external || []) {
      const line = externalLine(e);
      if (line) L.push('  ' + line);
    }
    L.push(...unitLines(p));
    L.push(...heldLines(p));
    const deferred = p.deferred || [];
    let changed = deferred.length;
    for (const r of p.resources || []) {
      if (r.action === 'no-op' && !showUnchanged) {
        // Unchanged, but what it warns of is still true (planner.RenderText).
        if ((r.warnings || []).length) {
          L.push('', '  # ' + r.namespace + '/' + r.kind + '/' + r.name + ' ' + VERBS['no-op']);
          for (const w of r.warnings) L.push('  # warning: ' + w);
        }
        continue;
      }
      changed++;
      L.push(...planResourceLines(r));
    }
    for (const d of deferred) {
      L.push('', '  # ' + d.namespace + '/' + d.kind + '/' + d.name + ' is known after apply: ' + (d.reason || ''));
      L.push('  ~ ' + (d.group || '') + ' ' + d.kind + ' ' + goQuote(d.namespace + '/' + d.name) + ' (known after apply) {');
      if (d.file) L.push('      source     = ' + goQuote(d.file + (d.line > 0 ? ':' + d.line : '')));
      L.push('    }');
    }
    const s = planSummary(p);
    const partial = !!partialLine(p);
    L.push('');
    if (changed === 0) {
      L.push('No changes. Azure matches the manifests (' + s('no-op') + ' resources).');
      if (partial) L.push(PARTIAL_FOOTER);
    } else {
      const kaa = deferred.length ? ', ' + deferred.length + ' known after apply (planned in this run once their values exist)' : '';
      L.push('Plan: ' + s('create') + ' to create, ' + s('adopt') + ' to adopt, ' + (s('move') ? s('move') + ' to move, ' : '') +
        s('update') + ' to update, ' + s('drift') + ' drifted to correct, ' + s('delete') + ' to delete, ' + s('detach') + ' to detach; ' +
        s('no-op') + ' unchanged, ' + s('observe') + ' observed' + kaa + '.');
      if (p.held) L.push('Held: nothing of this revision is applied until its deletions are approved.');
      if (partial) L.push(PARTIAL_FOOTER);
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
    if (/^Partial: /.test(line)) return 'pl-partial';
    if (/^ {2}(not managed by gitaso: |\.\.\. and \d+ more not managed)/.test(line)) return 'pl-held pl-unmanaged';
    return '';
  }

  // fillPlan writes lines into a <pre>; its textContent is exactly the CLI text.
  function fillPlan(pre, lines) {
    const frag = document.createDocumentFragment();
    for (const line of lines) {
      const span = el('span', { class: ('pl ' + lineClass(line)).trim() });
      // Mark "(known after apply)" and "(sensitive value[ from Secret ns/name])" inside the line.
      const parts = line.split(/(\(known after apply\)|\(sensitive value(?: from Secret [^()\s]+)?\))/);
      for (const part of parts) {
        if (part === KNOWN_AFTER_APPLY) span.append(el('span', { class: 'kaa', text: part }));
        else if (part === REDACTED || /^\(sensitive value from Secret [^()\s]+\)$/.test(part)) span.append(el('span', { class: 'redacted', text: part }));
        else if (part) span.append(part);
      }
      span.append('\n');
      frag.append(span);
    }
    pre.replaceChildren(frag);
  }

  // ---- routing --------------------------------------------------------

  function parseHash() {
    // "#/graph" and "#graph" are the same route.
    const h = location.hash.slice(1).replace(/^\//, '');
    const q = h.indexOf('?');
    const head = q >= 0 ? h.slice(0, q) : h;
    const params = new URLSearchParams(q >= 0 ? h.slice(q + 1) : '');
    const parts = head.split('/');
    if (parts[0] === 'resource' && parts.length === 5) {
      return { view: 'detail', params, key: parts.slice(1).map(decodeURIComponent) };
    }
    if (parts[0] === 'run' && /^[0-9]+$/.test(parts[1] || '')) return { view: 'run', params, id: parts[1] };
    if (parts[0] === 'unit' && parts.length === 4) return { view: 'unit', params, key: parts.slice(1).map(decodeURIComponent) };
    if (parts[0] === 'runs' || parts[0] === 'plan' || parts[0] === 'graph' || parts[0] === 'units' || parts[0] === 'audit') return { view: parts[0], params };
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
    for (const v of ['resources', 'detail', 'runs', 'run', 'plan', 'graph', 'units', 'unit', 'audit']) $('view-' + v).hidden = v !== name;
    for (const a of document.querySelectorAll('nav.tabs a')) {
      const active = a.dataset.view === name || (name === 'detail' && a.dataset.view === 'resources') || (name === 'run' && a.dataset.view === 'runs') ||
        (name === 'unit' && a.dataset.view === 'units');
      if (active) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
    }
  }

  function onRoute() {
    route = parseHash();
    showView(route.view);
    if (route.view === 'graph') drawGraphSoon();
    const f = filtersFromRoute();
    $('f-namespace').value = f.namespace;
    $('f-kind').value = f.kind;
    $('f-ready').value = ['true', 'false', 'unknown'].includes(f.ready) ? f.ready : '';
    $('f-name').value = f.name;
    document.title = { resources: 'Resources', detail: 'Resource', runs: 'Runs', run: 'Run', plan: 'Plan', graph: 'Graph', units: 'Units', unit: 'Unit', audit: 'Audit' }[route.view] + ' · gitaso';
    cache.detailText = '';
    cache.runText = '';
    if (route.view === 'run' && $('run-body').dataset.run !== String(route.id)) {
      // A route to the run already shown (the same hash routed again) keeps
      // it until the new load replaces it: no "Loading…" in between.
      $('h-run').textContent = 'Run #' + route.id;
      $('run-body').replaceChildren(el('p', { class: 'muted', text: 'Loading…' }));
      delete $('run-body').dataset.run;
    }
    if (route.view === 'detail') {
      $('h-detail').textContent = route.key[2] + ' ' + route.key[3];
      $('detail-body').replaceChildren(el('p', { class: 'muted', text: 'Loading…' }));
    }
    cache.unitText = '';
    if (route.view === 'unit') {
      $('h-unit').textContent = route.key.join('/');
      $('unit-body').replaceChildren(el('p', { class: 'muted', text: 'Loading…' }));
    }
    refresh(true);
  }

  // ---- views ----------------------------------------------------------

  // The list reads api/v1/resources a page at a time (PAGE resources, with
  // the filters, name included, applied by the server); "Load more" follows
  // the continue token. A refresh re-reads as many as are shown, in one
  // request. The summary counts come from api/v1/summary.
  function resourceQuery() {
    const f = filtersFromRoute();
    const q = new URLSearchParams();
    if (f.namespace) q.set('namespace', f.namespace);
    if (f.kind) q.set('kind', f.kind);
    if (['true', 'false', 'unknown'].includes(f.ready)) q.set('ready', f.ready);
    if (f.name) q.set('name', f.name);
    return q.toString();
  }

  // The list is shown by namespace, then dependencies first (a resource
  // after its owner and what it references: the graph's depth), then kind
  // and name. The API lists by key (namespace/group/kind/name); the depths
  // come from api/v1/graph, read again when the number of resources
  // changes or after GRAPH_REFETCH_MS. Without them the rows keep the API's
  // order and the caption says so.
  const order = { at: 0, total: -1, depth: null };
  async function loadOrder(total) {
    if (order.depth && order.total === total && Date.now() - order.at < GRAPH_REFETCH_MS) return;
    try {
      const doc = JSON.parse(await api('api/v1/graph'));
      const { depth } = graphDepths(doc);
      order.depth = new Map(doc.keys.map((k, i) => [k, depth[i]]));
      order.total = total;
      order.at = Date.now();
    } catch (e) {
      order.depth = null; // shown in the API's order
    }
  }

  function ordered(items) {
    if (!order.depth) return items;
    const d = (r) => {
      const v = order.depth.get(r.namespace + '/' + r.group + '/' + r.kind + '/' + r.name);
      return v === undefined || v < 0 ? 1e9 : v;
    };
    const cmp = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
    return items.slice().sort((a, b) => cmp(a.namespace, b.namespace) || d(a) - d(b) || cmp(a.kind, b.kind) || cmp(a.name, b.name) || cmp(a.group, b.group));
  }

  async function loadResources() {
    const key = resourceQuery();
    const shown = key === cache.resourcesKey && cache.resources ? cache.resources.length : 0;
    const limit = Math.min(10000, Math.max(PAGE, Math.ceil(shown / PAGE) * PAGE));
    const [text, sumText] = await Promise.all([
      api('api/v1/resources?' + (key ? key + '&' : '') + 'limit=' + limit),
      api('api/v1/summary'),
    ]);
    const sumTotal = JSON.parse(sumText).total;
    const had = order.depth;
    await loadOrder(sumTotal);
    if (had !== order.depth) cache.resourcesText = ''; // order changed: draw again
    if (key !== resourceQuery()) return; // the filters changed meanwhile
    cache.summary = JSON.parse(sumText);
    fillDatalist($('namespaces'), new Set(cache.summary.namespaces || []));
    fillDatalist($('kinds'), new Set((cache.summary.kinds || []).flatMap((k) => [k, k.slice(k.indexOf('/') + 1)])));
    if (text === cache.resourcesText && key === cache.resourcesKey && cache.resources) {
      renderResources(false);
      return;
    }
    const doc = JSON.parse(text);
    cache.resourcesText = text;
    cache.resourcesKey = key;
    cache.resources = doc.items || [];
    cache.resourcesContinue = doc.continue || '';
    renderResources(true);
  }

  async function loadMoreResources() {
    const key = cache.resourcesKey;
    const token = cache.resourcesContinue;
    if (!token) return;
    const btn = $('resources-more');
    btn.disabled = true;
    try {
      const doc = JSON.parse(await api('api/v1/resources?' + (key ? key + '&' : '') + 'limit=' + PAGE + '&continue=' + encodeURIComponent(token)));
      if (key !== cache.resourcesKey || token !== cache.resourcesContinue) return;
      cache.resources = cache.resources.concat(doc.items || []);
      cache.resourcesContinue = doc.continue || '';
      cache.resourcesText = '';
      renderResources(true);
      say('Loaded ' + cache.resources.length + ' resources.');
    } catch (e) {
      say('Loading more failed: ' + e.message);
    } finally {
      btn.disabled = false;
    }
  }

  function fillDatalist(dl, set) {
    if (dl.childElementCount === set.size) return;
    dl.replaceChildren(...[...set].sort().map((v) => el('option', { value: v })));
  }

  function renderResources(changed) {
    const items = cache.resources || [];
    const tbody = $('resources-body');
    // Times are relative, so re-render on every refresh; keep focus.
    const focusKey = tbody.contains(document.activeElement) ? document.activeElement.dataset.key : null;
    tbody.replaceChildren(...ordered(items).map(resourceRow));
    if (items.length && !performance.getEntriesByName('gitaso-list-drawn').length) performance.mark('gitaso-list-drawn');
    if (focusKey) {
      const a = tbody.querySelector('a[data-key="' + CSS.escape(focusKey) + '"]');
      if (a) a.focus();
    }
    const sumData = cache.summary || { total: items.length, ready: {} };
    const counts = { True: 0, False: 0, Unknown: 0 };
    for (const s of Object.keys(counts)) counts[s] = (sumData.ready || {})[s] || 0;
    const more = !!cache.resourcesContinue;
    const anyFilter = Object.values(filtersFromRoute()).some(Boolean);
    const cap = $('resources-caption');
    const by = order.depth ? 'by namespace, dependencies first (owners and referenced resources before what needs them), then kind and name'
      : 'by namespace, group, kind and name';
    if (more) {
      cap.textContent = 'Managed resources: showing ' + items.length + (anyFilter ? ' matching, more match' : ' of ' + sumData.total) +
        '; load more below or narrow the list with the filters. The rows shown are ' + by + '.';
    } else {
      cap.textContent = 'Managed resources (' + items.length + (anyFilter ? ' of ' + sumData.total : '') + '), ' + by + '.';
    }
    $('count-resources').textContent = String(sumData.total);
    $('resources-more').hidden = !more;
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
    empty.textContent = anyFilter ? 'No resource matches these filters.' : 'gitaso manages no resources yet.';
  }

  function resourceRow(r) {
    const st = readyStatus(r.ready);
    const key = resourcePath(r);
    const c = r.ready || {};
    // One line per row: what does not fit is cut with an ellipsis and is in
    // the cell's title (and on the resource's page).
    const readyCell = el('td', { class: 'ready', title: [c.reason, c.message].filter(Boolean).join(': ') || null }, readyBadge(c));
    if (c.reason) readyCell.append(' ', el('span', { class: 'reason', text: c.reason }));
    if (c.message) readyCell.append(' ', el('span', { class: 'message', text: c.message }));
    if (r.otherWriter) readyCell.append(' ', el('span', { class: 'other-writer', text: 'Another writer uses gitaso\'s principal' }));
    const arm = r.armId
      ? el('td', { class: 'armid' }, copyButton(r.armId, 'ARM ID of ' + r.kind + ' ' + r.name), ' ', el('code', { title: r.armId, text: armTail(r.armId) }))
      : el('td', { class: 'armid' }, el('span', { class: 'muted', text: '—' }));
    return el('tr', { class: 'row-' + st.toLowerCase(), 'data-key': r.namespace + '/' + r.group + '/' + r.kind + '/' + r.name },
      el('td', { text: r.namespace }),
      el('td', { class: 'kind', title: r.group + '/' + r.version + ' ' + r.kind }, r.kind),
      el('th', { scope: 'row', class: 'name', title: r.name }, el('a', { href: '#resource/' + key, 'data-key': key, text: r.name })),
      readyCell,
      arm,
      el('td', { class: 'rev', title: r.revision || '' }, el('code', { text: shortRev(r.revision) })),
      el('td', { class: 'time' }, timeEl(r.updatedAt)));
  }

  // otherWriterSection says that the Activity Log showed writes to the
  // resource with gitaso's own principal that this gitaso did not make.
  function otherWriterSection(o) {
    return el('section', { class: 'card other-writer-card', id: 'other-writer', 'aria-labelledby': 'h-other-writer' },
      el('h3', { id: 'h-other-writer', text: 'Another writer uses gitaso\'s principal' }),
      el('p', null, 'The Activity Log shows ' + (o.writes === 1 ? 'a write' : o.writes + ' writes') + ' to this resource by ',
        el('code', { text: o.caller || '' }), ', gitaso\'s own principal, that this gitaso did not make: another gitaso with its own state file, ' +
        'or gitaso\'s credential used elsewhere. gitaso corrects the change as drift; the other writer may undo it again.'),
      dl([
        ['Operation', o.operation ? el('code', { text: o.operation }) : ''],
        ['Newest write', validTime(o.at) ? timeEl(o.at) : ''],
        ['Seen', validTime(o.seenAt) ? timeEl(o.seenAt) : ''],
      ]));
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
    if (r.otherWriter) body.push(otherWriterSection(r.otherWriter));
    const lastErr = (r.runs || []).find((x) => x.error);
    if (lastErr && !(readyStatus(c) === 'False' && c.message === lastErr.error)) {
      cond.append(el('p', { class: 'lasterror' }, 'Last error, in run ', el('a', { href: '#run/' + lastErr.run, text: '#' + lastErr.run }), ': ',
        el('span', { class: 'message', text: lastErr.error })));
    }

    body.push(el('section', { class: 'card', 'aria-labelledby': 'h-props' },
      el('h3', { id: 'h-props', text: 'Resource' }),
      dl([
        ['ARM ID', r.armId ? el('span', null, el('code', { class: 'armid', text: r.armId }), ' ', copyButton(r.armId, 'ARM ID')) : ''],
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

    body.push(changeSection(r.lastChange));
    body.push(historySection(r.runs || []));
    if ((r.dependsOn || []).length) {
      body.push(el('section', { class: 'card', 'aria-labelledby': 'h-deps' }, el('h3', { id: 'h-deps', text: 'Depends on' }),
        el('ul', { class: 'deps' }, ...r.dependsOn.map((k) => el('li', null, el('a', { href: '#resource/' + k.split('/').map(encodeURIComponent).join('/'), text: k }))))));
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

  // changeSection shows the diff of the last applied change: the fields it
  // added, removed or replaced (both bodies are redacted by gitaso).
  function changeSection(ch) {
    const sec = el('section', { class: 'card wide', id: 'last-change', 'aria-labelledby': 'h-change' }, el('h3', { id: 'h-change', text: 'Last change' }));
    if (!ch) {
      sec.append(el('p', { class: 'muted', text: 'No change recorded yet.' }));
      return sec;
    }
    sec.append(el('p', { class: 'muted' }, (ch.action || 'change') + ' at revision ', el('code', { title: ch.revision || '', text: shortRev(ch.revision) }), ', ', timeEl(ch.at),
      ch.created ? ' — the resource was created; every field is new.' : ''));
    if (ch.hiddenOnly) {
      sec.append(el('p', { text: 'Only secret values changed; they are never shown.' }));
      return sec;
    }
    const sym = { add: '+', remove: '-', replace: '~' };
    const tbody = el('tbody');
    for (const d of ch.diff || []) {
      tbody.append(el('tr', { class: 'diff-' + d.op },
        el('td', { class: 'op', 'aria-label': d.op, text: sym[d.op] || d.op }),
        el('th', { scope: 'row' }, el('code', { text: d.path })),
        el('td', null, d.old !== undefined ? el('code', { class: 'old', text: JSON.stringify(d.old) }) : ''),
        el('td', null, d.new !== undefined ? el('code', { class: 'new', text: JSON.stringify(d.new) }) : '')));
    }
    sec.append(el('table', { class: 'grid small diff' },
      el('caption', { class: 'sr-only', text: 'Fields changed by the last change' }),
      el('thead', null, el('tr', null, el('th', { scope: 'col', text: '' }), el('th', { scope: 'col', text: 'Field' }),
        el('th', { scope: 'col', text: 'Before' }), el('th', { scope: 'col', text: 'After' }))), tbody));
    return sec;
  }

  function historySection(runs) {
    const sec = el('section', { class: 'card wide', id: 'history', 'aria-labelledby': 'h-history' }, el('h3', { id: 'h-history', text: 'Runs that touched it' }));
    if (!runs.length) {
      sec.append(el('p', { class: 'muted', text: 'No run has changed it since gitaso started recording (up-to-date runs are not listed).' }));
      return sec;
    }
    sec.append(el('table', { class: 'grid small' },
      el('caption', { class: 'sr-only', text: 'Runs that touched this resource, newest first' }),
      el('thead', null, el('tr', null, ...['Run', 'Revision', 'Started', 'Action', 'Outcome', 'Error'].map((h) => el('th', { scope: 'col', text: h })))),
      el('tbody', null, ...runs.map((x) => el('tr', { class: 'outcome-' + x.outcome },
        el('th', { scope: 'row' }, el('a', { href: '#run/' + x.run, text: '#' + x.run })),
        el('td', { title: x.revision || '' }, el('code', { text: shortRev(x.revision) })),
        el('td', null, timeEl(x.startedAt)),
        el('td', { text: x.action }),
        el('td', null, el('span', { class: 'badge touched ' + x.outcome, text: x.outcome })),
        el('td', { class: 'error' }, x.error ? el('div', { class: 'message', text: x.error }) : null))))));
    return sec;
  }

  // ---- run page -----------------------------------------------------------

  async function loadRun() {
    const id = route.id;
    // A load that finishes after the route moved on (another run, another
    // view) renders nothing: the page shows only the routed run.
    const current = () => route.view === 'run' && route.id === id;
    let text;
    try {
      text = await api('api/v1/runs/' + encodeURIComponent(id));
    } catch (e) {
      if (e instanceof APIError && e.status === 404) {
        if (!current()) return;
        $('run-body').replaceChildren(el('p', { class: 'empty', text: e.message }));
        delete $('run-body').dataset.run;
        return;
      }
      throw e;
    }
    const plan = await runPlan(JSON.parse(text).run);
    if (!current()) return;
    const sig = text + '|' + (plan ? plan.text.length + plan.text.slice(-64) : '');
    if (sig === cache.runText) {
      for (const t of $('run-body').querySelectorAll('time')) t.textContent = ago(new Date(t.getAttribute('datetime')));
      return;
    }
    cache.runText = sig;
    const doc = JSON.parse(text);
    doc.plan = plan;
    renderRun(doc, false);
  }

  // runPlan is the plan of run r when gitaso keeps it: an earlier phase's
  // (api/v1/runs/{id}/plan), or the latest plan when r is the newest run
  // and planned it. Null otherwise.
  async function runPlan(r) {
    try {
      const t = await api('api/v1/runs/' + r.id + '/plan');
      return { text: t, plan: parseJSON(t) };
    } catch (e) {
      if (!(e instanceof APIError && e.status === 404)) throw e;
    }
    const newest = (JSON.parse(await api('api/v1/runs?limit=' + MAX_PHASES)).items || []).find((x) => x.outcome && x.outcome !== 'refused');
    if (!newest || newest.id !== r.id) return null;
    try {
      const t = await api('api/v1/plan');
      const p = parseJSON(t);
      return p.revision === r.revision ? { text: t, plan: p } : null;
    } catch (e) {
      if (e instanceof APIError && e.status === 404) return null;
      throw e;
    }
  }

  function renderRun(doc, all) {
    const r = doc.run;
    const touched = doc.resources || [];
    $('h-run').textContent = 'Run #' + r.id;
    const props = el('section', { class: 'card', 'aria-labelledby': 'h-runprops' }, el('h3', { id: 'h-runprops', text: 'Run' }),
      dl([
        ['Outcome', el('span', { class: 'badge outcome ' + (r.outcome || 'running'), text: r.outcome || 'running' })],
        ['Revision', r.revision ? el('code', { title: r.revision, text: r.revision }) : ''],
        ['Trigger', r.trigger],
        ['Phase', r.phase ? el('span', null, r.phase + ' of run ', el('a', { href: '#run/' + r.phaseOf, text: '#' + r.phaseOf }),
          ' (objects known after apply, applied once their values existed)') : ''],
        ['Started', timeEl(r.startedAt)],
        ['Duration', duration(r.startedAt, r.finishedAt)],
        ['Counts', countsText(r.counts)],
        ['Summary', countsText(r.counts) ? '' : r.summary], // the counts again, in words
        ['Applied revision', doc.applied ? el('code', { title: doc.applied, text: shortRev(doc.applied) }) : ''],
      ]));
    const parts = [props];
    if (r.error || r.held) {
      parts.push(el('section', { class: 'card cond cond-false', 'aria-labelledby': 'h-runerr' }, el('h3', { id: 'h-runerr', text: 'Errors' }),
        r.error ? el('pre', { class: 'message runerror', text: r.error }) : null, heldNote(r)));
    }
    const sec = el('section', { class: 'card wide', 'aria-labelledby': 'h-touched' },
      el('h3', { id: 'h-touched', text: 'Resources touched (' + touched.length + ')' }));
    if (!touched.length) {
      sec.append(el('p', { class: 'muted', text: r.outcome === 'refused' || r.outcome === 'held'
        ? 'Nothing: the revision was not applied.' : 'None: everything was up to date, or the run recorded no resources.' }));
    } else {
      const shown = all ? touched : touched.slice(0, RUN_ROWS);
      sec.append(el('table', { class: 'grid small', id: 'run-resources' },
        el('caption', { class: 'sr-only', text: 'Resources this run touched' }),
        el('thead', null, el('tr', null, ...['Resource', 'Action', 'Outcome', 'Error'].map((h) => el('th', { scope: 'col', text: h })))),
        el('tbody', null, ...shown.map((x) => el('tr', { class: 'outcome-' + x.outcome, 'data-key': x.key },
          el('th', { scope: 'row' }, el('a', { href: '#resource/' + x.key.split('/').map(encodeURIComponent).join('/'), text: x.key })),
          el('td', { text: x.action }),
          el('td', null, el('span', { class: 'badge touched ' + x.outcome, text: x.outcome })),
          el('td', { class: 'error' }, x.error ? el('div', { class: 'message', text: x.error }) : null))))));
      if (shown.length < touched.length) {
        const btn = el('button', { type: 'button', id: 'run-all' }, 'Show all ' + touched.length);
        btn.addEventListener('click', () => renderRun(doc, true));
        sec.append(el('p', null, btn));
      }
    }
    parts.push(sec);
    const planSec = el('section', { class: 'card wide', 'aria-labelledby': 'h-runplan' }, el('h3', { id: 'h-runplan', text: 'Plan of this run' }));
    if (doc.plan) {
      const pre = el('pre', { class: 'plan', id: 'run-plan', tabindex: '0', 'aria-label': 'Plan of this run, as gitaso plan prints it' });
      fillPlan(pre, planLines(doc.plan.plan, false));
      planSec.append(pre);
    } else {
      planSec.append(el('p', { class: 'muted', text: 'Not kept: gitaso keeps the plan of the latest run (all its phases) only; ' +
        'the resources this run touched are listed above.' }));
    }
    parts.push(planSec);
    $('run-body').replaceChildren(...parts);
    $('run-body').dataset.run = String(r.id);
  }

  async function loadRuns() {
    const text = await api('api/v1/runs?limit=' + RUNS_LIMIT);
    cache.runsText = text;
    const doc = JSON.parse(text);
    cache.runs = doc.items || [];
    cache.applied = doc.applied || '';
    cache.refused = doc.refused || null;
    renderRuns();
  }

  function countsText(counts) {
    const keys = Object.keys(counts || {}).filter((k) => counts[k]).sort();
    return keys.map((k) => counts[k] + ' ' + k).join(', ');
  }

  function renderRuns() {
    const runs = cache.runs || [];
    $('runs-body').replaceChildren(...runs.map((r) => el('tr', { class: 'outcome-' + (r.outcome || 'running') },
      el('th', { scope: 'row' }, el('a', { href: '#run/' + r.id, text: String(r.id) })),
      el('td', { title: r.revision }, el('code', { text: shortRev(r.revision) })),
      el('td', null, r.trigger || '', r.phase ? el('div', { class: 'muted' }, 'phase ' + r.phase + ' of ', el('a', { href: '#run/' + r.phaseOf, text: '#' + r.phaseOf })) : null),
      el('td', null, timeEl(r.startedAt)),
      el('td', { text: duration(r.startedAt, r.finishedAt) }),
      el('td', null, el('span', { class: 'badge outcome ' + (r.outcome || 'running'), text: r.outcome || 'running' })),
      el('td', { text: countsText(r.counts) }),
      el('td', { class: 'error' }, r.error ? el('div', { class: 'message', text: r.error }) : null, heldNote(r),
        // The summary is the counts in words: shown only for a run without counts.
        r.summary && !countsText(r.counts) ? el('div', { class: 'muted', text: r.summary }) : null))));
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

  // ---- units -------------------------------------------------------------
  //
  // api/v1/units lists the Flux Kustomizations and HelmReleases (units),
  // with counts over all of them; it is read on every refresh, whatever the
  // view, for the banner that says when units failed (a partial run). A
  // repository without Flux objects has no units: no banner, and the view
  // says so.

  function unitPath(u) {
    return [u.kind, u.namespace, u.name].map(encodeURIComponent).join('/');
  }

  async function loadUnits() {
    let text;
    try {
      text = await api('api/v1/units');
    } catch (e) {
      if (e instanceof APIError && e.status === 404) text = '{"items":[],"total":0,"ready":{}}'; // an older gitaso
      else throw e;
    }
    if (text !== cache.unitsText) {
      cache.unitsText = text;
      cache.units = JSON.parse(text);
    }
    renderUnitsBanner(cache.units);
    if (route.view === 'units') renderUnits(cache.units);
  }

  // failedText is "2 of 43 units failed".
  function failedText(doc) {
    const failed = (doc.ready || {}).False || 0;
    return failed + ' of ' + plural(doc.total || 0, 'unit', 'units') + ' failed';
  }

  // renderUnitsBanner shows, on every view, that units failed: how many,
  // which (the first few), and that the rest applied.
  function renderUnitsBanner(doc) {
    const box = $('units-banner');
    const failed = (doc.items || []).filter(unitFailing);
    $('count-units').textContent = doc.total ? (failed.length ? failed.length + ' failed' : String(doc.total)) : '';
    $('tab-units').classList.toggle('tab-bad', failed.length > 0);
    const sig = failed.length ? JSON.stringify([doc.total, failed.map((u) => [unitID(u), u.ready.reason, u.lastAppliedRevision])]) : '';
    if (sig === cache.unitsBanner) return;
    cache.unitsBanner = sig;
    if (!failed.length) {
      box.hidden = true;
      box.replaceChildren();
      return;
    }
    const ul = el('ul', { class: 'units-failed' });
    for (const u of failed.slice(0, HELD_SHOWN)) {
      ul.append(el('li', null, el('a', { href: '#unit/' + unitPath(u), text: unitID(u) }), ' ',
        el('span', { class: 'reason', text: (u.ready && u.ready.reason) || '' }), ' · ',
        u.lastAppliedRevision ? el('span', null, 'last applied ', el('code', { title: u.lastAppliedRevision, text: goShortRevision(u.lastAppliedRevision) }))
          : el('span', { text: 'never applied' })));
    }
    if (failed.length > HELD_SHOWN) ul.append(el('li', { class: 'muted', text: 'and ' + (failed.length - HELD_SHOWN) + ' more (Units)' }));
    box.replaceChildren(
      el('h2', { id: 'units-banner-title' }, failedText(doc) + ': the rest applied'),
      el('p', null, 'A unit that fails keeps its objects exactly as last applied (not changed, not deleted) until it renders again; ',
        'every other unit is planned and applied. ', el('a', { href: '#units', text: 'Units' })),
      ul);
    box.hidden = false;
  }

  // unitErrors lists a unit's errors (file:line: ...), or with message its
  // Ready message when it has none (as the plan does).
  function unitErrors(u, message) {
    const errs = message ? unitProblems(u) : unitProblems(Object.assign({}, u, { ready: {} }));
    if (!errs.length) return null;
    return el('ul', { class: 'unit-errors' }, ...errs.map((e) => el('li', null, el('code', { text: e }))));
  }

  function unitRow(u) {
    const c = u.ready || {};
    const st = readyStatus(c);
    const readyCell = el('td', { class: 'ready' }, readyBadge(c));
    if (c.reason) readyCell.append(' ', el('span', { class: 'reason', text: c.reason }));
    if (u.ignored) readyCell.append(' ', el('span', { class: 'muted', text: '(renders no ASO object)' }));
    if (u.suspended) readyCell.append(' ', el('span', { class: 'muted', text: '(suspended)' }));
    if (c.message) readyCell.append(el('div', { class: 'message', text: c.message }));
    const rev = (r, at) => r ? el('td', { class: 'rev', title: r }, el('code', { text: goShortRevision(r) }), at && validTime(at) ? el('div', null, timeEl(at)) : null)
      : el('td', { class: 'rev' }, el('span', { class: 'muted', text: 'never' }));
    return el('tr', { class: 'row-' + st.toLowerCase(), 'data-unit': unitID(u) },
      el('td', { text: u.kind }),
      el('th', { scope: 'row', class: 'name' }, el('a', { href: '#unit/' + unitPath(u), text: u.namespace + '/' + u.name })),
      readyCell,
      rev(u.lastAppliedRevision, u.appliedAt),
      el('td', { class: 'rev', title: u.lastAttemptedRevision || '' }, u.lastAttemptedRevision ? el('code', { text: goShortRevision(u.lastAttemptedRevision) }) : ''),
      el('td', { class: 'error' }, unitFailing(u) ? unitErrors(u, false) : null),
      el('td', { class: 'objects', text: String((u.objects || []).length) }));
  }

  function renderUnits(doc) {
    const items = doc.items || [];
    const sig = cache.unitsText;
    if (sig === cache.unitsRendered && $('units-body').childElementCount === items.length) {
      for (const t of $('units-body').querySelectorAll('time')) t.textContent = ago(new Date(t.getAttribute('datetime')));
      return;
    }
    cache.unitsRendered = sig;
    // Failed units first, then the others, each by ID.
    const sorted = items.slice().sort((a, b) => (unitFailing(b) - unitFailing(a)) || (unitID(a) < unitID(b) ? -1 : unitID(a) > unitID(b) ? 1 : 0));
    $('units-body').replaceChildren(...sorted.map(unitRow));
    const r = doc.ready || {};
    $('units-summary').replaceChildren(...['True', 'False', 'Unknown'].map((st) =>
      el('span', { class: 'sumlink' }, readyBadge({ status: st }), ' ', el('strong', { text: String(r[st] || 0) }))));
    const failed = r.False || 0;
    $('units-caption').textContent = items.length
      ? (failed ? failedText(doc) + ': the rest applied. ' : 'Every unit applied. ') + 'Failed units first.' +
        (doc.ignored ? ' ' + plural(doc.ignored, 'release renders', 'releases render') + ' no ASO object.' : '')
      : 'Units';
    const empty = $('units-empty');
    empty.hidden = items.length > 0;
    empty.textContent = 'No units: the repository has no Flux Kustomization or HelmRelease (its manifests are one unit), or nothing has been rendered yet.';
  }

  async function loadUnit() {
    const k = route.key;
    let text;
    try {
      text = await api('api/v1/units/' + k.map(encodeURIComponent).join('/'));
    } catch (e) {
      if (e instanceof APIError && e.status === 404) {
        $('unit-body').replaceChildren(el('p', { class: 'empty', text: e.message }));
        return;
      }
      throw e;
    }
    if (text === cache.unitText) {
      for (const t of $('unit-body').querySelectorAll('time')) t.textContent = ago(new Date(t.getAttribute('datetime')));
      return;
    }
    cache.unitText = text;
    renderUnit(JSON.parse(text));
  }

  function renderUnit(u) {
    const c = u.ready || {};
    $('h-unit').textContent = u.kind + ' ' + u.namespace + '/' + u.name;
    const body = [];
    const cond = el('section', { class: 'card cond cond-' + readyStatus(c).toLowerCase(), 'aria-labelledby': 'h-unitcond' },
      el('h3', { id: 'h-unitcond', text: 'Ready condition' }),
      dl([
        ['Status', readyBadge(c)],
        ['Reason', c.reason],
        ['Message', c.message ? el('span', { class: 'message', text: c.message }) : ''],
        ['Last transition', validTime(c.lastTransitionTime) ? timeEl(c.lastTransitionTime) : ''],
        ['Next retry', validTime(u.nextRetryAt) ? at(u.nextRetryAt) : ''],
      ]));
    if (unitFailing(u)) {
      cond.append(el('p', { text: 'Its objects are kept exactly as last applied (not changed, not deleted) until it renders again.' }));
      const errs = unitErrors(u, false);
      if (errs) cond.append(el('p', { class: 'held-label', text: 'Errors:' }), errs);
    }
    body.push(cond);
    const deps = (u.dependsOn || []).map((d) => {
      const parts = d.split('/');
      return el('li', null, parts.length === 3 ? el('a', { href: '#unit/' + parts.map(encodeURIComponent).join('/'), text: d }) : el('code', { text: d }));
    });
    const parentParts = (u.parent || '').split('/');
    body.push(el('section', { class: 'card', 'aria-labelledby': 'h-unitprops' }, el('h3', { id: 'h-unitprops', text: 'Unit' }),
      dl([
        ['Kind', u.kind],
        ['Source file', u.file ? el('code', { text: u.file + (u.line > 0 ? ':' + u.line : '') }) : ''],
        ['Declared by', u.parent ? (parentParts.length === 3 ? el('a', { href: '#unit/' + parentParts.map(encodeURIComponent).join('/'), text: u.parent }) : u.parent) : ''],
        ['Depends on', deps.length ? el('ul', { class: 'deps' }, ...deps) : ''],
        ['Last applied revision', u.lastAppliedRevision ? el('code', { title: u.lastAppliedRevision, text: u.lastAppliedRevision }) : 'never'],
        ['Applied', validTime(u.appliedAt) ? timeEl(u.appliedAt) : ''],
        ['Last attempted revision', u.lastAttemptedRevision ? el('code', { title: u.lastAttemptedRevision, text: u.lastAttemptedRevision }) : ''],
        ['Wait for Ready', u.wait ? 'yes' : ''],
        ['Suspended', u.suspended ? 'yes' : ''],
        ['Ignored', u.ignored ? 'yes: the release renders no ASO object' : ''],
        ['Updated', validTime(u.updatedAt) ? timeEl(u.updatedAt) : ''],
      ])));
    const rs = u.resources || [];
    const sec = el('section', { class: 'card wide', 'aria-labelledby': 'h-unitres' },
      el('h3', { id: 'h-unitres', text: 'Resources (' + rs.length + ')' }));
    if (!rs.length) {
      sec.append(el('p', { class: 'muted', text: 'gitaso manages no resource of this unit.' }));
    } else {
      sec.append(el('div', { class: 'tablewrap' }, el('table', { class: 'grid small', id: 'unit-resources' },
        el('caption', { class: 'sr-only', text: 'Resources this unit rendered' }),
        el('thead', null, el('tr', null, ...['Namespace', 'Kind', 'Name', 'Ready', 'ARM ID', 'Revision', 'Updated'].map((h) => el('th', { scope: 'col', text: h })))),
        el('tbody', null, ...rs.map(resourceRow)))));
    }
    body.push(sec);
    $('unit-body').replaceChildren(...body);
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
    if (h.plan) parts.push(el('p', { class: 'held-plan' }, 'Plan ', el('code', { text: h.plan }), ' (approve it from its pull request with ', el('code', { text: '/gitaso approve ' + h.plan }), ').'));
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

  // renderRefused shows the banner while the newest revision is refused
  // (standing: the API's refused run, or else the newest finished run when
  // it refused): which revision, its errors, and the revision that stays
  // applied.
  function renderRefused(finished, applied, standing) {
    const box = $('refused');
    const refused = standing || (finished && finished.outcome === 'refused' ? finished : null);
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

  // ---- source and state health banner ------------------------------------

  // loadStatus reads api/v1/status: whether the source can be fetched and
  // the state written. null when the API does not answer it (an older
  // gitaso): the banner stays hidden.
  async function loadStatus() {
    try {
      return JSON.parse(await api('api/v1/status'));
    } catch (_) {
      return null;
    }
  }

  // since says when a failure started, as a time element and how long ago.
  function since(s) {
    const d = validTime(s);
    return d ? el('time', { datetime: d.toISOString(), title: d.toISOString(), text: d.toLocaleString() + ' (' + ago(d) + ')' }) : '—';
  }

  // at is a time to come (a retry) as a time element.
  function at(s) {
    const d = validTime(s);
    return el('time', { datetime: d.toISOString(), title: d.toISOString(), text: d.toLocaleTimeString() });
  }

  // renderHealth shows the banner while the source cannot be fetched or the
  // state cannot be written: the error, since when, how many times, and what
  // happens meanwhile. A fetch or a run that works again takes it away.
  function renderHealth(h) {
    const box = $('health');
    const src = h && h.source && h.source.failing ? h.source : null;
    const st = h && h.state && h.state.failing ? h.state : null;
    const sig = src || st ? JSON.stringify([src, st, h.ready, h.reason]) : '';
    if (sig === cache.healthText) return;
    cache.healthText = sig;
    if (!src && !st) {
      box.hidden = true;
      box.replaceChildren();
      return;
    }
    const parts = [];
    if (src) {
      const what = src.url ? el('span', null, el('code', { text: src.url }), src.branch ? ' (branch ' + src.branch + ')' : '') : 'The source';
      parts.push(el('div', { class: 'health-source' },
        el('h2', { id: 'health-title' }, 'The source cannot be fetched'),
        el('p', null, what, ' has failed ', plural(src.consecutiveFailures || 0, 'time', 'times'), ' in a row since ', since(src.failingSince), '.'),
        el('p', { class: 'health-error' }, el('code', { text: src.error || '' })),
        el('p', null, src.lastSuccessAt
          ? el('span', null, 'Last fetched ', since(src.lastSuccessAt), src.revision ? el('span', null, ' at ', el('code', { title: src.revision, text: shortRev(src.revision) })) : '', '. Nothing new is applied until a fetch works; what was applied is still reconciled.')
          : el('span', { text: 'The source has not been fetched since gitaso started: nothing is applied until a fetch works.' }))));
    }
    if (st) {
      parts.push(el('div', { class: 'health-state' },
        el('h2', { id: src ? 'health-state-title' : 'health-title' }, 'The state cannot be written'),
        el('p', null, plural(st.consecutiveFailures || 0, 'run', 'runs'), ' could not record since ', since(st.failingSince),
          '; nothing of them was applied.', validTime(st.nextRetryAt) ? el('span', null, ' Next try at ', at(st.nextRetryAt), '.') : ''),
        el('p', { class: 'health-error' }, el('code', { text: st.error || '' })),
        el('p', { class: 'muted', text: 'Free space on the state file\'s volume (or make it writable); the retry needs no restart.' })));
    }
    if (h.ready === false && h.reason) parts.push(el('p', { class: 'muted' }, '/readyz answers 503: ', el('code', { text: h.reason })));
    box.replaceChildren(...parts);
    box.hidden = false;
  }

  function confirmApprove(rev, h) {
    const d = $('approve-dialog');
    $('approve-what').textContent = 'Delete ' + plural(h.deletions || 0, 'resource', 'resources') + ' of revision ' + shortRev(rev) +
      ' from Azure' + ((h.unmanaged || []).length ? ', with ' + plural(h.unmanaged.length, 'resource', 'resources') + ' gitaso does not manage' : '') +
      '? Only the deletions listed are approved; a later revision that deletes more is held again.';
    d.dataset.revision = rev;
    d.dataset.plan = h.plan || '';
    if (!d.open) d.showModal();
    $('approve-cancel').focus();
  }

  async function approve(rev, plan) {
    say('Approving the deletions of revision ' + shortRev(rev) + '…');
    const btn = $('approve');
    if (btn) btn.disabled = true;
    try {
      await post('api/v1/approve', plan ? { revision: rev, plan } : { revision: rev });
      say('Deletions of revision ' + shortRev(rev) + ' approved: gitaso is applying it. The new run appears under Runs when it finishes.');
      setTimeout(() => refresh(true), 1000);
    } catch (e) {
      if (e instanceof APIError && e.status === 401) {
        needToken(() => approve(rev, plan), 'approve deletions');
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
        cache.phases = [];
        return;
      }
      throw e;
    }
    if (text !== cache.planText || cache.plan === undefined) {
      cache.planText = text;
      cache.plan = parseJSON(text);
    }
    await loadPhasePlans();
  }

  // MAX_PHASES is reconcile's maxPhases: the runs of one reconcile.
  const MAX_PHASES = 8;

  // loadPhasePlans finds the phases of the latest run. A reconcile whose
  // objects wait for values its resources export applies in phases, each a
  // run (phase and phaseOf say which): api/v1/plan is the last phase's plan,
  // api/v1/runs/{id}/plan those of the earlier phases. cache.phases lists
  // them, first phase first, as { run, plan, text }; the last is the latest
  // plan (its run null when it is not the newest run's).
  async function loadPhasePlans() {
    const runs = JSON.parse(await api('api/v1/runs?limit=' + MAX_PHASES)).items || [];
    const newest = runs.find((r) => r.outcome && r.outcome !== 'refused');
    // The latest plan is the newest run's when their revisions agree (a
    // run that failed before planning recorded none).
    const own = !!(newest && cache.plan && newest.revision === cache.plan.revision);
    const phases = [];
    if (own && newest.phaseOf) {
      const group = runs.filter((r) => r.id === newest.phaseOf || r.phaseOf === newest.phaseOf).sort((a, b) => a.id - b.id);
      for (const r of group) {
        if (r.id >= newest.id) break;
        const old = (cache.phases || []).find((x) => x.run && x.run.id === r.id && x.text);
        if (old) { phases.push(Object.assign({}, old, { run: r })); continue; }
        try {
          const t = await api('api/v1/runs/' + r.id + '/plan');
          phases.push({ run: r, plan: parseJSON(t), text: t });
        } catch (e) {
          if (!(e instanceof APIError && e.status === 404)) throw e; // not kept: not shown
        }
      }
    }
    phases.push({ run: own ? newest : null, plan: cache.plan, text: cache.planText });
    cache.phases = phases;
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
    const phases = cache.phases && cache.phases.length ? cache.phases : [{ run: null, plan: p, text: cache.planText }];
    const sig = phases.map((x) => (x.run ? x.run.id : '') + ':' + x.text.length + ':' + x.text.slice(-64)).join('|') + '|' +
      cache.planText + '|' + $('plan-unchanged').checked;
    let changes = 0;
    for (const x of phases) changes += (x.plan.resources || []).filter((r) => r.action !== 'no-op' && r.action !== 'observe').length;
    $('count-plan').textContent = changes ? String(changes) : '';
    pre.hidden = false;
    empty.hidden = true;
    if (sig === renderedPlan) return;
    renderedPlan = sig;
    const unchanged = $('plan-unchanged').checked;
    const box = $('plan-phases');
    const last = phases[phases.length - 1];
    const head = $('plan-last-head');
    if (phases.length === 1) {
      $('h-plan').textContent = last.run ? 'Plan of run #' + last.run.id : 'Latest plan';
      box.replaceChildren();
      box.hidden = true;
      head.hidden = true;
    } else {
      // Every phase of the run, each as `gitaso plan` prints it.
      $('h-plan').textContent = 'Plan of run #' + phases[0].run.id + ', in ' + phases.length + ' phases';
      box.replaceChildren(...phases.slice(0, -1).map((x, i) => {
        const pp = el('pre', { class: 'plan phase-plan', tabindex: '0', 'data-run': x.run.id, 'aria-label': 'Plan of phase ' + (i + 1) });
        fillPlan(pp, planLines(x.plan, unchanged));
        return el('section', { class: 'phase', 'aria-labelledby': 'h-phase-' + x.run.id },
          el('h3', { id: 'h-phase-' + x.run.id }, 'Phase ' + (i + 1) + ': ', el('a', { href: '#run/' + x.run.id, text: 'run #' + x.run.id })), pp);
      }));
      box.hidden = false;
      head.replaceChildren('Phase ' + phases.length + ' (objects known after apply, applied once their values existed): ',
        el('a', { href: '#run/' + last.run.id, text: 'run #' + last.run.id }));
      head.hidden = false;
    }
    fillPlan(pre, planLines(p, unchanged));
  }

  // ---- audit trail ------------------------------------------------------
  //
  // api/v1/audit pages the audit trail newest first; it needs the admin
  // right, and a caller without it sees the API's refusal, which names the
  // right, in place of the table. "Older events" follows the continue token.

  const audit = { items: [], next: '', text: '' };

  async function loadAudit(more) {
    let text;
    try {
      text = await api('api/v1/audit?limit=100' + (more && audit.next ? '&continue=' + encodeURIComponent(audit.next) : ''));
    } catch (e) {
      if (e instanceof APIError && e.status === 403) {
        $('audit-refused').hidden = false;
        $('audit-refused').textContent = e.message;
        $('audit-body').replaceChildren();
        $('audit-more').hidden = true;
        return;
      }
      throw e;
    }
    $('audit-refused').hidden = true;
    const doc = JSON.parse(text);
    if (more) {
      audit.items = audit.items.concat(doc.items || []);
    } else {
      if (text === audit.text) return;
      audit.text = text;
      audit.items = doc.items || [];
    }
    audit.next = doc.continue || '';
    renderAudit();
  }

  function renderAudit() {
    const rows = audit.items.map((e) => el('tr', { 'data-id': e.id, class: e.outcome === 'refused' ? 'row-false' : null },
      el('td', null, String(e.id)),
      el('td', null, timeEl(e.at)),
      el('td', null, e.who || ''),
      el('td', null, e.action || ''),
      el('td', null, el('span', { class: 'badge outcome ' + (e.outcome === 'allowed' ? 'succeeded' : e.outcome === 'refused' ? 'failed' : 'partial'), text: e.outcome || '' })),
      el('td', null, [e.right, (e.namespaces || []).join(', ')].filter(Boolean).join(' in ')),
      el('td', { class: 'mono' }, e.plan ? e.plan + (e.revision ? ' @ ' + shortRev(e.revision) : '') : ''),
      el('td', null, e.from || ''),
      el('td', null, e.detail || '')));
    $('audit-body').replaceChildren(...rows);
    $('audit-empty').hidden = audit.items.length > 0;
    $('audit-more').hidden = !audit.next;
  }

  // loadLastRuns returns the newest run and the newest finished one (one
  // run at a time: at most one is in progress).
  async function loadLastRuns() {
    let runs = route.view === 'runs' && cache.runs ? cache.runs : null;
    let applied = cache.applied || '';
    let refused = cache.refused || null;
    if (!runs) {
      const doc = JSON.parse(await api('api/v1/runs?limit=2'));
      runs = doc.items || [];
      applied = cache.applied = doc.applied || '';
      refused = cache.refused = doc.refused || null;
    }
    // refused is the standing refusal: the run that refused the newest
    // revision, which the refreshes of the applied revision after it do
    // not end.
    return { newest: runs[0], finished: runs.find((r) => r.outcome), applied, refused };
  }

  // ---- dependency graph ----------------------------------------------------
  //
  // api/v1/graph gives every resource (key and Ready status) and its edges
  // to its owner and its references. The layout is layered: a resource sits
  // one layer right of the deepest resource it depends on; namespaces are
  // stacked bands; a layer wraps into columns so a band stays about square.
  // It is drawn on one canvas (10,000 nodes stay fast): drag to pan, wheel
  // or +/− to zoom, click a node or search for details.

  const GRAPH_REFETCH_MS = 30000;
  const G_DX = 200, G_DY = 22, G_LAYER_GAP = 80, G_BAND_GAP = 50, G_HEAD = 34, G_CELL = 64;
  const G_COLORS = { T: '#2da44e', F: '#cf222e', U: '#8c959f' };
  const G_STATUS = { T: 'True', F: 'False', U: 'Unknown' };
  const graph = { text: '', at: 0, doc: null, n: 0, x: null, y: null, bands: [], cells: null,
    deps: null, rdeps: null, scale: 1, tx: 0, ty: 0, selected: -1, matches: [], match: -1, query: '', fitted: false, drawn: 0 };

  async function loadGraph() {
    if (graph.doc && Date.now() - graph.at < GRAPH_REFETCH_MS) {
      drawGraphSoon();
      return;
    }
    const text = await api('api/v1/graph');
    graph.at = Date.now();
    if (text === graph.text && graph.doc) {
      drawGraphSoon();
      return;
    }
    graph.text = text;
    const doc = JSON.parse(text);
    const selKey = graph.selected >= 0 ? graph.doc.keys[graph.selected] : null;
    layoutGraph(doc);
    graph.selected = selKey ? doc.keys.indexOf(selKey) : -1;
    if (!graph.fitted) fitGraph();
    renderGraphSide();
    drawGraphSoon();
  }

  // graphDepths reads api/v1/graph's edges: deps[i] are [j, 0 owner | 1
  // reference], rdeps[j] the nodes that depend on j, and depth[i] is 1 + the
  // deepest dependency of i (0 for a root; iterative, cycles cut).
  function graphDepths(doc) {
    const n = doc.keys.length;
    const deps = Array.from({ length: n }, () => []);
    const rdeps = Array.from({ length: n }, () => []);
    for (const [i, j] of doc.owners) { deps[i].push([j, 0]); rdeps[j].push(i); }
    for (const [i, j] of doc.references) { deps[i].push([j, 1]); rdeps[j].push(i); }
    const depth = new Int32Array(n).fill(-1);
    const state = new Uint8Array(n); // 0 new, 1 on stack, 2 done
    for (let s = 0; s < n; s++) {
      if (state[s]) continue;
      const stack = [s];
      while (stack.length) {
        const v = stack[stack.length - 1];
        if (state[v] === 0) {
          state[v] = 1;
          for (const [d] of deps[v]) if (state[d] === 0) stack.push(d);
          continue;
        }
        stack.pop();
        if (state[v] === 2) continue;
        let dv = 0;
        for (const [d] of deps[v]) if (state[d] === 2) dv = Math.max(dv, depth[d] + 1);
        depth[v] = dv;
        state[v] = 2;
      }
    }
    return { deps, rdeps, depth };
  }

  function layoutGraph(doc) {
    const n = doc.keys.length;
    const { deps, rdeps, depth } = graphDepths(doc);
    const byNS = new Map();
    for (let i = 0; i < n; i++) {
      const k = doc.keys[i];
      const ns = k.slice(0, k.indexOf('/'));
      if (!byNS.has(ns)) byNS.set(ns, []);
      byNS.get(ns).push(i);
    }
    // Each namespace is a band laid out at (0, 0) first, then bands are
    // packed in rows (shelves) so that the whole has the canvas's shape and
    // fits a screen rather than one long column.
    const x = new Float32Array(n), y = new Float32Array(n);
    const bands = [];
    for (const ns of [...byNS.keys()].sort()) {
      const members = byNS.get(ns);
      const rows = Math.max(12, Math.ceil(Math.sqrt(members.length * G_DX / G_DY) / 1.2));
      const layers = [];
      for (const i of members) (layers[depth[i]] = layers[depth[i]] || []).push(i);
      let left = 0, used = 0;
      for (const layer of layers) {
        if (!layer) continue;
        layer.forEach((i, r) => {
          x[i] = left + Math.floor(r / rows) * G_DX;
          y[i] = G_HEAD + (r % rows) * G_DY;
        });
        left += Math.ceil(layer.length / rows) * G_DX + G_LAYER_GAP;
        used = Math.max(used, Math.min(rows, layer.length));
      }
      bands.push({ ns, members, left: 0, top: 0, h: G_HEAD + used * G_DY, w: left - G_LAYER_GAP + G_DX, count: members.length });
    }
    let area = 0;
    for (const b of bands) area += (b.w + G_BAND_GAP) * (b.h + G_BAND_GAP);
    const cv = $('graph-canvas');
    const aspect = cv.clientWidth && cv.clientHeight ? cv.clientWidth / cv.clientHeight : 2;
    const shelf = Math.max(...bands.map((b) => b.w), Math.sqrt(area * aspect));
    let bx = 0, by = 0, rowH = 0;
    for (const b of bands) {
      if (bx > 0 && bx + b.w > shelf) { bx = 0; by += rowH + G_BAND_GAP; rowH = 0; }
      b.left = bx;
      b.top = by;
      for (const i of b.members) { x[i] += bx; y[i] += by; }
      bx += b.w + G_BAND_GAP;
      rowH = Math.max(rowH, b.h);
      delete b.members;
    }
    const cells = new Map();
    for (let i = 0; i < n; i++) {
      const c = Math.floor(x[i] / G_CELL) + ',' + Math.floor(y[i] / G_CELL);
      if (!cells.has(c)) cells.set(c, []);
      cells.get(c).push(i);
    }
    Object.assign(graph, { doc, n, x, y, bands, cells, deps, rdeps, matches: [], match: -1 });
    const counts = { T: 0, F: 0, U: 0 };
    for (const c of doc.ready) counts[c]++;
    $('graph-info').textContent = n + ' resources, ' + (doc.owners.length + doc.references.length) + ' dependencies; ' +
      counts.T + ' ready, ' + counts.F + ' not ready, ' + counts.U + ' unknown';
    const ul = $('graph-notready-list');
    const bad = [];
    for (let i = 0; i < n && bad.length < 200; i++) if (doc.ready[i] === 'F') bad.push(i);
    ul.replaceChildren(...bad.map((i) => el('li', null, el('a', { href: '#resource/' + keyPath(doc.keys[i]), text: doc.keys[i] }))));
    if (counts.F > bad.length) ul.append(el('li', { class: 'muted', text: 'and ' + (counts.F - bad.length) + ' more (Resources, Ready False)' }));
    $('graph-notready').querySelector('summary').textContent = 'Resources not ready (' + counts.F + ')';
  }

  function keyPath(k) {
    return k.split('/').map(encodeURIComponent).join('/');
  }

  function graphCanvas() {
    const c = $('graph-canvas');
    const dpr = window.devicePixelRatio || 1;
    const w = c.clientWidth, h = c.clientHeight;
    if (c.width !== Math.round(w * dpr) || c.height !== Math.round(h * dpr)) {
      c.width = Math.round(w * dpr);
      c.height = Math.round(h * dpr);
    }
    return { c, w, h, dpr };
  }

  function fitGraph() {
    const { w, h } = graphCanvas();
    if (!graph.n || !w || !h) return;
    let maxX = 0, maxY = 0;
    for (const b of graph.bands) { maxX = Math.max(maxX, b.left + b.w); maxY = Math.max(maxY, b.top + b.h); }
    graph.scale = Math.min(1.5, (w - 40) / maxX, (h - 40) / maxY);
    graph.tx = 20 + 10 * graph.scale;
    graph.ty = 20;
    graph.fitted = true;
  }

  let graphFrame = 0;
  function drawGraphSoon() {
    if (graphFrame || route.view !== 'graph') return;
    graphFrame = requestAnimationFrame(() => { graphFrame = 0; drawGraph(); });
  }

  function drawGraph() {
    const { c, w, h, dpr } = graphCanvas();
    const ctx = c.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const dark = window.matchMedia && matchMedia('(prefers-color-scheme: dark)').matches;
    ctx.fillStyle = dark ? '#0d1117' : '#ffffff';
    ctx.fillRect(0, 0, w, h);
    if (!graph.n) {
      ctx.fillStyle = dark ? '#9198a1' : '#57606a';
      ctx.font = '14px sans-serif';
      ctx.fillText('gitaso manages no resources yet.', 20, 30);
      return;
    }
    const { scale: s, tx, ty, x, y, doc } = graph;
    const sx = (v) => v * s + tx, sy = (v) => v * s + ty;
    // The world rectangle on screen, with a margin for labels.
    const x0 = (-tx) / s - G_DX, x1 = (w - tx) / s + G_DX, y0 = (-ty) / s - G_DY, y1 = (h - ty) / s + G_DY;
    const vis = (i) => x[i] >= x0 && x[i] <= x1 && y[i] >= y0 && y[i] <= y1;
    ctx.font = '600 13px sans-serif';
    for (const b of graph.bands) {
      if (b.top > y1 || b.top + b.h < y0 || b.left > x1 || b.left + b.w < x0) continue;
      ctx.fillStyle = dark ? 'rgba(68,147,248,.07)' : 'rgba(11,92,173,.05)';
      ctx.fillRect(sx(b.left - 10), sy(b.top), (b.w + 10) * s, b.h * s);
      ctx.fillStyle = dark ? '#9198a1' : '#57606a';
      if (s * G_DY > 4) ctx.fillText(b.ns + ' (' + b.count + ')', sx(b.left), sy(b.top) + 16);
    }
    // Edges: from a resource to what it depends on.
    ctx.lineWidth = 1;
    for (const kind of [0, 1]) {
      ctx.beginPath();
      ctx.strokeStyle = kind === 0 ? (dark ? 'rgba(201,209,217,.35)' : 'rgba(87,96,106,.45)') : (dark ? 'rgba(68,147,248,.45)' : 'rgba(11,92,173,.45)');
      ctx.setLineDash(kind === 0 ? [] : [4, 3]);
      for (let i = 0; i < graph.n; i++) {
        for (const [j, k] of graph.deps[i]) {
          if (k !== kind || (!vis(i) && !vis(j))) continue;
          ctx.moveTo(sx(x[i]), sy(y[i]));
          ctx.lineTo(sx(x[j]), sy(y[j]));
        }
      }
      ctx.stroke();
    }
    ctx.setLineDash([]);
    const sel = graph.selected;
    if (sel >= 0) {
      ctx.beginPath();
      ctx.strokeStyle = '#ff9b00';
      ctx.lineWidth = 2.5;
      for (const [j] of graph.deps[sel]) { ctx.moveTo(sx(x[sel]), sy(y[sel])); ctx.lineTo(sx(x[j]), sy(y[j])); }
      for (const i of graph.rdeps[sel]) { ctx.moveTo(sx(x[i]), sy(y[i])); ctx.lineTo(sx(x[sel]), sy(y[sel])); }
      ctx.stroke();
    }
    const r = Math.max(2, Math.min(7, 6 * s));
    const labels = s * G_DY >= 13;
    ctx.font = '12px sans-serif';
    let drawn = 0;
    for (const st of ['U', 'T', 'F']) { // not ready last: on top
      ctx.fillStyle = G_COLORS[st];
      ctx.beginPath();
      for (let i = 0; i < graph.n; i++) {
        if (doc.ready[i] !== st || !vis(i)) continue;
        ctx.moveTo(sx(x[i]) + r, sy(y[i]));
        ctx.arc(sx(x[i]), sy(y[i]), r, 0, 2 * Math.PI);
        drawn++;
      }
      ctx.fill();
    }
    graph.drawn = drawn;
    // Marks for measuring (web/bench_test.go): the first drawing with nodes.
    if (drawn && !performance.getEntriesByName('gitaso-graph-drawn').length) performance.mark('gitaso-graph-drawn');
    if (labels) {
      ctx.fillStyle = dark ? '#e6edf3' : '#1b1f24';
      for (let i = 0; i < graph.n; i++) {
        if (!vis(i)) continue;
        const k = doc.keys[i].split('/');
        ctx.fillText(k[2] + ' ' + k[3], sx(x[i]) + r + 4, sy(y[i]) + 4, (G_DX - 20) * s);
      }
    }
    for (const i of graph.matches) {
      if (!vis(i)) continue;
      ctx.strokeStyle = '#ff9b00';
      ctx.lineWidth = 2;
      ctx.beginPath();
      ctx.arc(sx(x[i]), sy(y[i]), r + 3, 0, 2 * Math.PI);
      ctx.stroke();
    }
    if (sel >= 0) {
      ctx.strokeStyle = dark ? '#ffffff' : '#000000';
      ctx.lineWidth = 2;
      ctx.beginPath();
      ctx.arc(sx(x[sel]), sy(y[sel]), r + 4, 0, 2 * Math.PI);
      ctx.stroke();
    }
    $('graph-canvas').dataset.drawn = String(drawn);
  }

  function nodeAt(px, py) {
    const wx = (px - graph.tx) / graph.scale, wy = (py - graph.ty) / graph.scale;
    const reach = Math.max(8, 9 / graph.scale);
    let best = -1, bestD = reach * reach;
    const cx = Math.floor(wx / G_CELL), cy = Math.floor(wy / G_CELL);
    const span = Math.ceil(reach / G_CELL);
    for (let a = cx - span; a <= cx + span; a++) {
      for (let b = cy - span; b <= cy + span; b++) {
        for (const i of graph.cells.get(a + ',' + b) || []) {
          const d = (graph.x[i] - wx) ** 2 + (graph.y[i] - wy) ** 2;
          if (d < bestD) { bestD = d; best = i; }
        }
      }
    }
    return best;
  }

  function selectNode(i, center) {
    graph.selected = i;
    if (i >= 0 && center) {
      const { w, h } = graphCanvas();
      graph.scale = Math.max(graph.scale, 1);
      graph.tx = w / 2 - graph.x[i] * graph.scale;
      graph.ty = h / 2 - graph.y[i] * graph.scale;
    }
    renderGraphSide();
    drawGraphSoon();
  }

  function renderGraphSide() {
    const box = $('graph-detail');
    const i = graph.selected;
    if (i < 0 || !graph.doc) {
      box.hidden = true;
      box.replaceChildren();
      return;
    }
    const k = graph.doc.keys[i];
    const [ns, group, kind, name] = k.split('/');
    const st = G_STATUS[graph.doc.ready[i]];
    const item = (j) => el('li', null, readyBadge({ status: G_STATUS[graph.doc.ready[j]] }), ' ',
      el('a', { href: '#resource/' + keyPath(graph.doc.keys[j]), text: graph.doc.keys[j] }));
    box.replaceChildren(...[
      el('h3', { id: 'graph-selected', text: kind + ' ' + name }),
      el('p', null, readyBadge({ status: st }), ' in ', el('strong', { text: ns }), ' ', el('code', { text: group })),
      el('p', null, el('a', { href: '#resource/' + keyPath(k), id: 'graph-open' }, 'Open the resource page →')),
      graph.deps[i].length ? el('p', { class: 'held-label', text: 'Depends on' }) : null,
      graph.deps[i].length ? el('ul', { class: 'deps' }, ...graph.deps[i].map(([j, t]) => {
        const li = item(j);
        li.append(' ', el('span', { class: 'muted', text: t === 0 ? '(owner)' : '(reference)' }));
        return li;
      })) : null,
      graph.rdeps[i].length ? el('p', { class: 'held-label', text: 'Needed by ' + graph.rdeps[i].length }) : null,
      graph.rdeps[i].length ? el('ul', { class: 'deps' }, ...graph.rdeps[i].slice(0, 20).map(item)) : null,
    ].filter(Boolean));
    box.hidden = false;
  }

  function searchGraph(q) {
    q = q.trim().toLowerCase();
    if (!graph.doc || !q) {
      graph.matches = [];
      graph.query = '';
      $('graph-found').textContent = '';
      drawGraphSoon();
      return;
    }
    if (q !== graph.query) {
      graph.query = q;
      graph.matches = [];
      graph.doc.keys.forEach((k, i) => { if (k.toLowerCase().includes(q)) graph.matches.push(i); });
      graph.match = -1;
    }
    if (!graph.matches.length) {
      $('graph-found').textContent = 'No resource matches "' + q + '".';
      selectNode(-1);
      return;
    }
    graph.match = (graph.match + 1) % graph.matches.length;
    $('graph-found').textContent = (graph.matches.length + ' match' + (graph.matches.length === 1 ? '' : 'es') + '; showing ' + (graph.match + 1) +
      (graph.matches.length > 1 ? ' (Find again for the next)' : '') + '.');
    selectNode(graph.matches[graph.match], true);
  }

  function zoomGraph(f, px, py) {
    const { w, h } = graphCanvas();
    if (px === undefined) { px = w / 2; py = h / 2; }
    const ns = Math.min(8, Math.max(0.005, graph.scale * f));
    graph.tx = px - (px - graph.tx) * (ns / graph.scale);
    graph.ty = py - (py - graph.ty) * (ns / graph.scale);
    graph.scale = ns;
    drawGraphSoon();
  }

  function wireGraph() {
    const c = $('graph-canvas');
    let drag = null;
    c.addEventListener('pointerdown', (ev) => {
      drag = { x: ev.clientX, y: ev.clientY, tx: graph.tx, ty: graph.ty, moved: false };
      c.setPointerCapture(ev.pointerId);
    });
    c.addEventListener('pointermove', (ev) => {
      if (!drag) return;
      const dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
      graph.tx = drag.tx + dx;
      graph.ty = drag.ty + dy;
      drawGraphSoon();
    });
    c.addEventListener('pointerup', (ev) => {
      const d = drag;
      drag = null;
      if (d && !d.moved && graph.n) {
        const rect = c.getBoundingClientRect();
        selectNode(nodeAt(ev.clientX - rect.left, ev.clientY - rect.top), false);
      }
    });
    c.addEventListener('wheel', (ev) => {
      ev.preventDefault();
      const rect = c.getBoundingClientRect();
      zoomGraph(Math.exp(-ev.deltaY * 0.0015), ev.clientX - rect.left, ev.clientY - rect.top);
    }, { passive: false });
    c.addEventListener('keydown', (ev) => {
      const step = 60;
      const moves = { ArrowLeft: [step, 0], ArrowRight: [-step, 0], ArrowUp: [0, step], ArrowDown: [0, -step] };
      if (moves[ev.key]) { graph.tx += moves[ev.key][0]; graph.ty += moves[ev.key][1]; drawGraphSoon(); ev.preventDefault(); }
      else if (ev.key === '+' || ev.key === '=') zoomGraph(1.25);
      else if (ev.key === '-') zoomGraph(0.8);
      else if (ev.key === 'Escape') selectNode(-1);
    });
    $('g-zoomin').addEventListener('click', () => zoomGraph(1.25));
    $('g-zoomout').addEventListener('click', () => zoomGraph(0.8));
    $('g-fit').addEventListener('click', () => { fitGraph(); drawGraphSoon(); });
    $('graph-search').addEventListener('submit', (ev) => { ev.preventDefault(); searchGraph($('g-search').value); });
    window.addEventListener('resize', drawGraphSoon);
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
    if (route.view === 'run') jobs.push(loadRun());
    if (route.view === 'graph') jobs.push(loadGraph());
    if (route.view === 'plan') jobs.push(loadPlan());
    if (route.view === 'unit') jobs.push(loadUnit());
    if (route.view === 'audit') jobs.push(loadAudit());
    jobs.push(loadUnits());
    await Promise.all(jobs);
    renderHealth(await loadStatus());
    const runs = await loadLastRuns();
    const last = runs.newest;
    renderHeld(runs.finished, runs.newest);
    renderRefused(runs.finished, runs.applied, runs.refused);
    lastOK = new Date();
    const r = $('refreshed');
    r.replaceChildren('Updated ' + lastOK.toLocaleTimeString());
    if (last) {
      r.append(' · last run ', el('a', { href: '#run/' + last.id, text: '#' + last.id }), ' ',
        el('span', { class: 'badge outcome ' + (last.outcome || 'running'), text: last.outcome || 'running' }), ' ', timeEl(last.startedAt));
    } else {
      r.append(' · no run yet');
    }
  }

  function refresh(now) {
    clearTimeout(timer);
    if (inFlight && !now) return inFlight;
    const p = doRefresh().then(() => setAlert(''), (e) => {
      if (e instanceof APIError && e.status === 401) {
        // Reading needs a caller: sign in, or give the token.
        if (who && who.signIn && (who.identity || {}).kind !== 'user' && token === null) {
          setAlert('Sign in to see gitaso\'s status ("Sign in", top right).');
        } else if (!$('token-dialog').open) {
          needToken(() => refresh(true), 'read gitaso\'s status');
        }
        return;
      }
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

  // loadWho shows who is signed in, a sign-in link or sign-out.
  async function loadWho() {
    try {
      who = JSON.parse(await api('api/v1/whoami'));
    } catch (_) {
      who = null;
      return;
    }
    const id = who.identity || {};
    const signedIn = id.kind === 'user';
    $('who').hidden = !(who.signIn || id.kind === 'token');
    const groups = id.groups && id.groups.length ? ' (' + id.groups.join(', ') + ')' : '';
    $('who-name').textContent = signedIn ? 'Signed in as ' + (id.name || id.subject) + groups :
      id.kind === 'token' ? 'Token ' + (id.name || id.subject) + groups : (who.signIn ? 'Not signed in' : '');
    $('who-name').title = signedIn && id.issuer ? 'signed in with ' + id.issuer : '';
    $('sign-in').hidden = !who.signIn || signedIn;
    $('sign-in').href = 'auth/login?return=' + encodeURIComponent(location.pathname + location.hash);
    $('sign-out').hidden = !signedIn;
    $('sign-out-csrf').value = who.csrfToken || '';
  }

  // needToken asks for the token after a 401 and retries action with it;
  // where people sign in, it points at the sign-in link instead.
  function needToken(action, what) {
    if (who && who.signIn && (who.identity || {}).kind !== 'user' && token === null) {
      say('Sign in to ' + what + '.');
      $('sign-in').focus();
      return;
    }
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

  // signOut ends the session (POST auth/logout with the CSRF token: the
  // page's no-referrer policy makes a form post's Origin "null", which the
  // API refuses).
  async function signOut(ev) {
    ev.preventDefault();
    try {
      await api('auth/logout', { method: 'POST', headers: { 'X-CSRF-Token': (who && who.csrfToken) || '' } });
      say('Signed out.');
    } catch (e) {
      say('Sign-out failed: ' + e.message);
    }
    await loadWho();
    refresh(true);
  }

  function wire() {
    $('sync').addEventListener('click', sync);
    $('audit-more').addEventListener('click', () => loadAudit(true).catch((e) => setAlert(e.message)));
    $('sign-out').addEventListener('submit', signOut);
    $('token-form').addEventListener('submit', (ev) => {
      ev.preventDefault(); // never submit the form: the token must not reach a URL
      const v = $('token-input').value.trim();
      $('token-input').value = '';
      $('token-dialog').close();
      if (!v) return;
      token = v;
      loadWho(); // names the token's identity
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
      approve(d.dataset.revision, d.dataset.plan);
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
    let nameTimer = 0;
    $('f-name').addEventListener('input', () => {
      // The server filters by name; no history entry per keystroke, and
      // one request once typing pauses.
      const f = filtersFromRoute();
      f.name = $('f-name').value.trim();
      history.replaceState(null, '', filterHash(f));
      route = parseHash();
      clearTimeout(nameTimer);
      nameTimer = setTimeout(() => refresh(true), 250);
    });
    $('resources-more').addEventListener('click', loadMoreResources);
    wireGraph();
    $('plan-unchanged').addEventListener('change', renderPlan);
    $('autorefresh').addEventListener('change', () => ($('autorefresh').checked ? refresh(true) : clearTimeout(timer)));
    document.addEventListener('visibilitychange', () => { if (!document.hidden) refresh(true); else clearTimeout(timer); });
    window.addEventListener('hashchange', () => {
      onRoute();
      if (route.view === 'detail') $('h-detail').focus();
      if (route.view === 'run') $('h-run').focus();
    });
  }

  function start() {
    wire();
    loadWho().finally(onRoute);
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
