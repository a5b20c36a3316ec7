// The operators' page: plain DOM, no build step. The admin token stays in this tab (sessionStorage) and
// goes to the JSON API as a bearer token; every value is written with textContent (never as HTML).
(function () {
  'use strict';
  const $ = (id) => document.getElementById(id);
  const KEY = 'coaching.adminToken';
  let token = sessionStorage.getItem(KEY) || '';

  const say = (text) => ($('message').textContent = text || '');

  async function api(method, path, body) {
    const res = await fetch(path, {
      method,
      headers: Object.assign(
        { accept: 'application/json', authorization: 'Bearer ' + token },
        body === undefined ? {} : { 'content-type': 'application/json' },
      ),
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const data = await res.json().catch(() => null);
    if (!res.ok) {
      const why = data && (data.message || (data.detail && data.detail.map((d) => d.msg).join('; ')));
      const err = new Error(method + ' ' + path + ': ' + res.status + (why ? ' ' + why : ''));
      err.status = res.status;
      throw err;
    }
    return data;
  }

  function cell(text, cls) {
    const td = document.createElement('td');
    td.textContent = text === null || text === undefined ? '' : String(text);
    if (cls) td.className = cls;
    return td;
  }
  function badge(state) {
    const td = document.createElement('td');
    const span = document.createElement('span');
    span.className = 'state state-' + state;
    span.textContent = state;
    td.appendChild(span);
    return td;
  }
  function button(label, cls, onClick) {
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = label;
    b.className = cls;
    b.addEventListener('click', async () => {
      b.disabled = true;
      try {
        await onClick();
        say('');
      } catch (e) {
        say(e.message);
      }
      await load();
    });
    return b;
  }
  function fill(tbody, rows, empty) {
    tbody.replaceChildren(...rows);
    if (!rows.length) {
      const tr = document.createElement('tr');
      const td = cell(empty, 'empty');
      td.colSpan = 8;
      tr.appendChild(td);
      tbody.appendChild(tr);
    }
  }
  const REVIEW_PAGE = 50;
  const when = (iso) => (iso ? new Date(iso).toLocaleString() : '');

  async function loadCounts() {
    const c = await api('GET', '/admin/notifications');
    document.querySelector('[data-testid=count-total]').textContent = c.total;
    document.querySelector('[data-testid=count-unread]').textContent = c.unread;
    document.querySelector('[data-testid=count-delivered]').textContent = c.delivered;
    fill(
      $('by-type'),
      c.byType.map((t) => {
        const tr = document.createElement('tr');
        tr.dataset.type = t.type;
        tr.append(cell(t.type), cell(t.total), cell(t.unread), cell(t.delivered));
        return tr;
      }),
      'no notifications yet',
    );
  }

  async function loadLatest() {
    const f = new FormData($('filter'));
    const q = new URLSearchParams({ limit: '20' });
    for (const k of ['user', 'type', 'unread'])
      if (String(f.get(k) || '').trim()) q.set(k, String(f.get(k)).trim());
    // from / to are picked in the operator's own zone (datetime-local, no zone): sent as the instants they are.
    for (const k of ['from', 'to']) {
      const v = String(f.get(k) || '');
      if (!v) continue;
      const at = new Date(v);
      q.set(k, isNaN(at.getTime()) ? v : at.toISOString());
    }
    const list = await api('GET', '/manage/admin/notifications?' + q);
    fill(
      $('notifications'),
      list.map((n) => {
        const tr = document.createElement('tr');
        tr.dataset.notification = n.id;
        if (n.id === detailId) tr.className = 'selected';
        const action = document.createElement('td');
        const open = document.createElement('button');
        open.type = 'button';
        open.className = 'details';
        open.textContent = 'Details';
        open.addEventListener('click', () => showDetail(n.id));
        action.appendChild(open);
        tr.append(
          cell(when(n.createdAt)),
          cell(n.userId, 'mono'),
          cell(n.type),
          cell(n.message, 'text'),
          cell(n.unread ? 'unread' : when(n.readAt)),
          cell(when(n.deliveredAt)),
          action,
        );
        return tr;
      }),
      'none',
    );
  }

  // One notification (30) under the list, with the e-mails its cause sent its user; a Refresh reads it again.
  let detailId = null;
  const field = (name) => $('notification').querySelector('[data-field=' + name + ']');
  async function loadDetail() {
    const id = detailId;
    if (!id) return;
    let n;
    try {
      n = await api('GET', '/manage/admin/notifications/' + encodeURIComponent(id));
    } catch (e) {
      if (e.status === 404 && id === detailId) hideDetail();
      throw e;
    }
    if (id !== detailId) return; // another one was chosen (or the detail closed) meanwhile
    field('id').textContent = n.id;
    field('type').textContent = n.type;
    field('user').textContent = n.userId;
    field('created').textContent = when(n.createdAt);
    field('message').textContent = n.message;
    field('read').textContent = n.unread ? 'unread' : when(n.readAt);
    field('delivered').textContent = n.deliveredAt ? when(n.deliveredAt) : 'not yet';
    // null: the notification was written before its cause was kept (migration 113), until a rebuild.
    const emails = n.emailDeliveries;
    fill(
      $('notification-emails'),
      (emails || []).map((d) => {
        const tr = document.createElement('tr');
        tr.dataset.delivery = d.id;
        tr.dataset.state = d.status;
        tr.append(
          badge(d.status),
          cell(d.template),
          cell(d.to, 'text'),
          cell(d.attempts),
          cell(d.error, 'error'),
          cell(when(d.sentAt)),
        );
        return tr;
      }),
      emails === null ? 'not recorded (written before this was kept)' : 'none',
    );
    $('notification').hidden = false;
    $('notification').dataset.notification = n.id;
    for (const tr of $('notifications').querySelectorAll('tr[data-notification]'))
      tr.classList.toggle('selected', tr.dataset.notification === n.id);
  }
  function showDetail(id) {
    detailId = id;
    delete $('notification').dataset.notification;
    loadDetail().then(
      () => say(''),
      (e) => say(e.message),
    );
  }
  function hideDetail() {
    detailId = null;
    $('notification').hidden = true;
    delete $('notification').dataset.notification;
    for (const tr of $('notifications').querySelectorAll('tr.selected')) tr.classList.remove('selected');
  }

  async function loadDeliveries() {
    let list;
    try {
      // The latest 50, and the latest 200 failed ones however old: a failed e-mail stays in view (with its Retry)
      // when more than 50 later ones were sent.
      const [latest, failed] = await Promise.all([
        api('GET', '/api/v1/admin/emails?limit=50'),
        api('GET', '/api/v1/admin/emails?status=failed&limit=200'),
      ]);
      const shown = new Set(latest.map((d) => d.id));
      list = latest.concat(failed.filter((d) => !shown.has(d.id)));
      list.sort((a, b) => (a.updatedAt < b.updatedAt ? 1 : a.updatedAt > b.updatedAt ? -1 : 0));
    } catch (e) {
      if (e.status === 404) return fill($('deliveries'), [], 'e-mail deliveries are not available');
      throw e;
    }
    fill(
      $('deliveries'),
      list.map((d) => {
        const tr = document.createElement('tr');
        tr.dataset.delivery = d.id;
        tr.dataset.state = d.status;
        const action = document.createElement('td');
        if (d.status === 'failed')
          action.appendChild(
            button('Retry', 'retry', () =>
              api('POST', '/api/v1/admin/emails/' + encodeURIComponent(d.id) + '/retry'),
            ),
          );
        tr.append(
          cell(when(d.updatedAt)),
          cell(d.to, 'text'),
          cell(d.template),
          badge(d.status),
          cell(d.attempts),
          cell(d.error, 'error'),
          action,
        );
        return tr;
      }),
      'no e-mails yet',
    );
  }

  async function loadServices() {
    const list = await api('GET', '/api/v1/admin/services?status=review&limit=' + REVIEW_PAGE);
    fill(
      $('services'),
      list.map((s) => {
        const tr = document.createElement('tr');
        tr.dataset.service = s.id;
        const actions = document.createElement('td');
        actions.append(
          button('Approve', 'approve', () => api('POST', '/api/v1/admin/services/' + s.id + '/approve')),
          ' ',
          button('Reject', 'reject', () => {
            // Cancel (null) leaves the service waiting; OK with no reason rejects it without one.
            const reason = window.prompt('Reason for the coach (optional)', '');
            if (reason === null) return undefined;
            const body = reason.trim() ? { reason: reason.trim() } : {};
            return api('POST', '/api/v1/admin/services/' + s.id + '/reject', body);
          }),
        );
        tr.append(
          cell(when(s.createdAt)),
          cell(s.name, 'text'),
          cell(s.coachId, 'mono'),
          cell(s.price + ' ' + s.priceCurrency),
          actions,
        );
        return tr;
      }),
      'nothing waits for review',
    );
    // A full page may not be all: the list is oldest first, so the next ones show as these are decided.
    if (list.length === REVIEW_PAGE) {
      const tr = document.createElement('tr');
      tr.className = 'more';
      const td = cell(
        'the oldest ' + REVIEW_PAGE + ' are shown; more may wait (approve or reject these to see them)',
        'empty',
      );
      td.colSpan = 8;
      tr.appendChild(td);
      $('services').appendChild(tr);
    }
  }

  async function loadProjections() {
    const list = await api('GET', '/api/v1/admin/projections');
    fill(
      $('projection-rows'),
      list.map((p) => {
        const tr = document.createElement('tr');
        tr.dataset.projection = p.name;
        tr.append(
          cell(p.name),
          badge(p.state),
          cell(p.position, 'mono'),
          cell(p.lagEvents),
          cell(p.lagSeconds === null ? '' : p.lagSeconds.toFixed(1)),
        );
        if (p.error) tr.title = p.error;
        return tr;
      }),
      'no projections',
    );
  }

  async function load() {
    const results = await Promise.allSettled([
      loadCounts(),
      loadLatest(),
      loadDetail(),
      loadDeliveries(),
      loadServices(),
      loadProjections(),
    ]);
    const failed = results.filter((r) => r.status === 'rejected').map((r) => r.reason);
    if (failed.some((e) => e.status === 401 || e.status === 403)) {
      signOut();
      say('This token is not accepted: it must be a valid token with the admin role.');
      return;
    }
    if (failed.length) say(failed.map((e) => e.message).join(' · '));
    document.body.dataset.loaded = String(Date.now());
  }

  function signedIn() {
    $('signin').hidden = true;
    $('who').hidden = false;
    $('panels').hidden = false;
    try {
      const claims = JSON.parse(atob(token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/')));
      $('who-text').textContent = 'signed in as ' + claims.sub;
    } catch (e) {
      $('who-text').textContent = 'signed in';
    }
    return load();
  }
  function signOut() {
    token = '';
    sessionStorage.removeItem(KEY);
    $('signin').hidden = false;
    $('who').hidden = true;
    $('panels').hidden = true;
    hideDetail();
  }

  $('signin').addEventListener('submit', (e) => {
    e.preventDefault();
    token = $('token')
      .value.trim()
      .replace(/^Bearer\s+/i, '');
    sessionStorage.setItem(KEY, token);
    $('token').value = '';
    say('');
    signedIn();
  });
  $('signout').addEventListener('click', signOut);
  $('notification-close').addEventListener('click', hideDetail);
  $('refresh').addEventListener('click', load);
  $('filter').addEventListener('submit', (e) => {
    e.preventDefault();
    loadLatest().catch((err) => say(err.message));
  });
  if (token) signedIn();
})();
