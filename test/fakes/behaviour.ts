// The behaviour DSL lives with the shipped provider simulators.
export { type Behaviour, COMMON_STEPS, parseBehaviour, Script, type Step } from '../../src/simulators/behaviour'
