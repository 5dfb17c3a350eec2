// Temporary: profile the 304 path.
import { writeFileSync } from 'node:fs'
import { runChildrenCompiled, startPombo } from './lib/pombo'
import { wrk } from './lib/wrk'

async function main(): Promise<void> {
  runChildrenCompiled()
  const pombo = await startPombo(9700, { PM_LIMIT_IP_PER_MIN: '0' }, 'api', ['--cpu-prof', '--cpu-prof-dir=/tmp/prof'])
  const app = await pombo.createApp()
  const base = `${pombo.url}/api/v1`
  const j = async (url: string, method: string, body?: unknown, key?: string) => {
    const r = await fetch(url, { method, headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) }, body: body === undefined ? undefined : JSON.stringify(body) })
    return r.json() as Promise<any>
  }
  await j(`${base}/in_app_messages/config`, 'PUT', { app_id: app.id, inapp_ativo: true }, app.api_key)
  for (let i = 0; i < 3; i++) {
    const c = await j(`${base}/in_app_messages`, 'POST', { app_id: app.id, conteudo: { pt: { titulo: 'x' } }, regras: { prioridade: i } }, app.api_key)
    await j(`${base}/in_app_messages/${c.id}/publicar?app_id=${app.id}`, 'POST', undefined, app.api_key)
  }
  const lines: string[] = []
  for (let i = 0; i < 200; i++) {
    const reg = await j(`${base}/players`, 'POST', { app_id: app.id, device_type: 1, identifier: `p-${i}` })
    const path = `/api/v1/inapp/pending?app_id=${app.id}&player_id=${reg.id}&schema=0.6`
    const p = await j(`${pombo.url}${path}`, 'GET')
    lines.push(`${path} ${p.etag}`)
  }
  writeFileSync('/tmp/prof-304.txt', `${lines.join('\n')}\n`)
  const lua = `
local paths, tags = {}, {}
for line in io.lines("/tmp/prof-304.txt") do
  local p, t = line:match("^(%S+) ?(.*)$")
  paths[#paths + 1] = p
  tags[#tags + 1] = t
end
local n = 0
request = function()
  n = n + 1
  if n > #paths then n = 1 end
  return wrk.format("GET", paths[n], { ["If-None-Match"] = tags[n] }, nil)
end
`
  console.log(await wrk({ url: pombo.url, durationS: 6, lua }))
  await pombo.stop()
}
main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1) })
