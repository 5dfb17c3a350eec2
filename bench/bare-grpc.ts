// The confirmation stream's baseline, run as a child process (as Pombo is): a bare @grpc/grpc-js server whose
// `Assinar` streams `desde_seq` copies of one prebuilt event (BENCH_SAMPLE, JSON) with the same back-pressure
// handling as Pombo's (write, then wait for 'drain' when it answers false), then ends. Prints its port.
import * as grpc from '@grpc/grpc-js'
import { type SubscribeRequest, confirmationStream, type StreamEvent } from '../src/confirmations/proto'

const sample = JSON.parse(process.env.BENCH_SAMPLE ?? '{}') as StreamEvent
const server = new grpc.Server()
server.addService(confirmationStream().service, {
  Assinar: async (call: grpc.ServerWritableStream<SubscribeRequest, StreamEvent>) => {
    const n = Number(call.request.desde_seq)
    for (let i = 1; i <= n && !call.cancelled; i++) {
      if (!call.write({ ...sample, seq: String(i) })) await new Promise((r) => call.once('drain', r))
    }
    call.end()
  },
})
server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) => {
  if (err) throw err
  process.stdout.write(`${port}\n`)
})
process.on('SIGTERM', () => server.forceShutdown())
