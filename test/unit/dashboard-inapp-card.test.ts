// The editor's preview chooses the language block with the SDK's own rule: the dashboard's pickContent answers
// what the SDK's (packages/sdk/src/inapp/rules.ts) answers, case by case.
import t from 'tap'
import { pickContent as sdkPick } from '../../packages/sdk/src/inapp/rules'
import { cardPreview, pickContent } from '../../src/dashboard/inapp-editor/card'

t.test('pickContent agrees with the SDK', async (t) => {
  const contents: Array<Record<string, unknown>> = [
    { pt: { titulo: 'Olá' } },
    { pt: { titulo: 'Olá' }, en: { titulo: 'Hi' } },
    { en: { titulo: 'Hi' }, es: { titulo: 'Hola' } },
    { es: { titulo: 'Hola' }, pt: 'not a block', en: { titulo: 'Hi' } },
    { 'pt-BR': { titulo: 'Oi' }, pt: { titulo: 'Olá' } },
    {},
  ]
  for (const c of contents) {
    for (const lang of [undefined, 'pt', 'en', 'es', 'fr', 'pt-BR']) {
      const sdk = sdkPick(c, lang)
      const ours = pickContent(c, lang)
      t.same(
        { language: ours.language, block: ours.block },
        { language: sdk.idioma, block: sdk.bloco },
        `${JSON.stringify(c)} ${lang}`,
      )
    }
  }
})

t.test('the card: colours only after their checks, never markup from the campaign', async (t) => {
  const out = cardPreview(
    {
      formato: 'banner_bottom',
      conteudo: { pt: { titulo: '<script>x</script>', corpo: 'Oi' } },
      estilo: { fundo: 'red;background:url(x)', texto: '#112233', fechar: { mostrar: false } },
    },
    'pt',
  ).text
  t.match(out, /&lt;script&gt;x&lt;\/script&gt;/)
  t.notMatch(out, /<script>/)
  t.match(out, /data-css="\{&quot;color&quot;:&quot;#112233&quot;\}"/, 'the valid colour only')
  t.notMatch(out, /url\(x\)/)
  t.notMatch(out, /fechar-previa/, 'the X hidden')
  t.match(out, /class="tela formato-banner_bottom"/)
})
