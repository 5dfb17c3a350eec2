// The FCM provider tests again with PM_PROVIDER_HTTP2=node: node:http2 behind the pool's interface must give every
// answer, outcome and token exactly as our client does (test/integration/providers-fcm.test.ts, unchanged).
process.env.PM_PROVIDER_HTTP2 = 'node'
require('./providers-fcm.test')
