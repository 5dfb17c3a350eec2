// The page: picks the push token (Firebase's when config.mjs has a Firebase app, else a local one), starts the SDK
// in the foreground (registration, in-app feed), draws in-app cards, feeds triggers, and lets you paste a push for
// the service worker when there is no Firebase. The SDK never asks for notification permission: the button does.
import { config } from '/config.mjs'
import { idbStorage } from '/idb-storage.mjs'
import { APP_KEY, startPombo, TOKEN_KEY } from '/sdk.mjs'

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
  const have = await idbStorage.getItem(TOKEN_KEY)
  return have ?? `web-local-${crypto.randomUUID()}`
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
  if (fromQuery) await idbStorage.setItem(APP_KEY, fromQuery)
  const reg = await navigator.serviceWorker.register('/sw.mjs', { type: 'module' })
  await navigator.serviceWorker.ready
  await idbStorage.setItem(TOKEN_KEY, await chooseToken(reg))

  const pombo = await startPombo({ background: false, onError: (e) => log(`[${e.kind}] ${e.message}`) })
  $('player').textContent = pombo.playerId ?? '(não registrado: veja o registro abaixo)'
  $('token').textContent = pombo.token ?? ''
  pombo.inapp.onShow(drawCard)

  new BroadcastChannel('pombo-example').onmessage = ({ data }) => {
    if (data.type === 'push')
      log(`push ${data.display.notificationId}: "${data.display.title ?? ''}" — recibo: ${data.display.receipt}`)
    if (data.type === 'tap') log(`clique ${data.tap?.notificationId}: recibo ${data.tap?.receipt}`)
    if (data.type === 'log') log(data.text)
  }
  $('permission').onclick = async () => log(`permissão: ${await Notification.requestPermission()}`)
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
