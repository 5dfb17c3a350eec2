// The tests' client for the services they start: the product's keep-alive HTTP/1.1 client (src/http/client.ts), one
// per test process. What the tests read of an answer: the status, the headers as a Headers object, the body as text.
import { httpClient } from '../../src/http/client'

export const { request } = httpClient()
