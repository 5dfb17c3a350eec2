// The one error `pombo simulate` refuses with (exit 2, one line). Its own module: the CLI's entry tells it apart from
// other failures without loading the simulators (their TLS and token code) for every other command.
export class SimulateError extends Error {
  override name = 'SimulateError'
}
