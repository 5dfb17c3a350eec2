// Whether a process still runs: what a test run left behind (its compiled sources, its pooled test schemas) is
// removed by the next run once the run that made it is gone.
export const alive = (pid) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return err.code === 'EPERM'
  }
}
