// The page: registers the service worker (sw.js: one importScripts line), picks the push token (Firebase's when
// config.mjs has a Firebase app, else a local one), starts the SDK with the IndexedDB storage it shares with the
// worker (registration, in-app feed), draws in-app cards, feeds triggers, and lets you paste a push for the worker
// when there is no Firebase. The SDK never asks for notification permission: the button does.
import { config } from '/config.mjs'
import { IndexedDbStorage, Pombo } from '/sdk/index.js'

// The example's own settings (not the SDK's): the app id from the address and the local token.
const APP_KEY = 'pombo-example:app_id'
const TOKEN_KEY = 'pombo-example:token'

const $ = (id) => document.getElementById(id)
const log = (text) => {
  const li = document.createElement('li')
  li.textContent = `${new Date().toLocaleTimeString()} ${text}`
  $('log').prepend(li)
}

async function firebaseToken(reg) {
  const v = '10.12.2'
  const { initializeApp } = await import(`https://www.gstatic.com/firebasejs/${v}/firebase-app.js`)
  const { getMessaging, getToken } = await import(`https://www.gstatic.com/firebasejs/${v}/firebase-messaging.js`)
  const { vapidKey, ...app } = config.firebase
  return getToken(getMessaging(initializeApp(app)), { vapidKey, serviceWorkerRegistration: reg })
}

async function chooseToken(reg) {
  if (config.firebase && Notification.permission === 'granted') return firebaseToken(reg)
  const token = localStorage.getItem(TOKEN_KEY) ?? `web-local-${crypto.randomUUID()}`
  localStorage.setItem(TOKEN_KEY, token)
  return token
}

function drawCard(d) {
  const card = $('card')
  const c = d.conteudo
  card.replaceChildren()
  const h = document.createElement('h3')
  h.textContent = c.titulo ?? (c.blocos?.find((b) => b.tipo === 'texto')?.texto || d.campanhaId)
  const p = document.createElement('p')
  p.textContent = c.corpo ?? ''
  const ok = document.createElement('button')
  ok.textContent = c.botao?.texto ?? 'Abrir'
  ok.onclick = () => {
    d.click()
    d.close()
    card.hidden = true
    log(`in-app ${d.campanhaId}: clique`)
  }
  const x = document.createElement('button')
  x.textContent = 'Fechar'
  x.onclick = () => {
    d.close()
    card.hidden = true
    log(`in-app ${d.campanhaId}: fechou`)
  }
  card.append(h, p, ok, x)
  card.dataset.formato = d.formato
  card.hidden = false
  d.onClose = () => {
    card.hidden = true
  }
  log(`in-app ${d.campanhaId}: impressão (ocorrência ${d.ocorrencia})`)
}

async function main() {
  const fromQuery = new URLSearchParams(location.search).get('app')
  if (fromQuery) localStorage.setItem(APP_KEY, fromQuery)
  const appId = config.appId || localStorage.getItem(APP_KEY)
  if (!appId) throw new Error('sem app_id: abra a página com ?app=<app_id> ou preencha config.mjs')
  const reg = await navigator.serviceWorker.register('/sw.js')
  await navigator.serviceWorker.ready

  const pombo = await Pombo.init({
    // The page's own origin: serve.mjs forwards /api/ to Pombo (the device routes also answer other origins).
    baseUrl: location.origin,
    appId,
    appVersion: config.appVersion,
    deviceType: 5, // Chrome/web; 7 Safari, 8 Firefox
    getToken: () => chooseToken(reg),
    // Shared with the worker: it learns here which service and app its pushes' receipts go to.
    storage: new IndexedDbStorage(),
    onError: (e) => log(`[${e.kind}] ${e.message}`),
  })
  $('player').textContent = pombo.playerId ?? '(não registrado: veja o registro abaixo)'
  $('token').textContent = pombo.token ?? ''
  pombo.inapp.onShow(drawCard)

  new BroadcastChannel('pombo-example').onmessage = ({ data }) => {
    if (data.type === 'push')
      log(
        `push ${data.id}: "${data.title ?? ''}" — ${data.shown ? 'exibido' : 'não exibido'}, recibo: ${data.receipt ?? 'nenhum'}`,
      )
    if (data.type === 'tap') log(`clique ${data.id}: recibo ${data.receipt}, aberto ${data.opened ?? 'nada'}`)
    if (data.type === 'log') log(data.text)
  }
  $('permission').onclick = async () => {
    log(`permissão: ${await Notification.requestPermission()}`)
    await pombo.refreshToken() // with Firebase, the token exists only once permission is granted
  }
  $('trigger').onsubmit = (ev) => {
    ev.preventDefault()
    const raw = $('valor').value
    const value = $('numero').checked ? Number(raw) : raw
    pombo.inapp.trigger($('chave').value, raw === '' ? null : value)
    log(`gatilho ${$('chave').value} = ${JSON.stringify(raw === '' ? null : value)}`)
  }
  $('simulate').onsubmit = (ev) => {
    ev.preventDefault()
    let payload
    try {
      payload = JSON.parse($('payload').value)
    } catch (err) {
      log(`JSON inválido: ${err.message}`)
      return
    }
    reg.active.postMessage({ type: 'simulate-push', payload })
  }
  $('flush').onclick = async () => log(`flush: ${JSON.stringify(await pombo.flush())}`)
}

main().catch((err) => log(`erro: ${err.message}`))
