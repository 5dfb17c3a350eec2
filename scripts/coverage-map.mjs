// tap's coverage map (package.json "tap"."coverage-map"): whatever the test file, coverage is recorded for src/
// only, so the figure checked against the floor is the service's code, not the tests, scripts or the SDK build.
export default () => 'src/**/*.ts'
