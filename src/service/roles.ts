// The roles a process can take (`pombo serve --roles`): its own module, so the CLI can check the flag without
// loading the service itself.
export type Role = 'api' | 'worker' | 'dashboard'
export const ALL_ROLES: readonly Role[] = ['api', 'worker', 'dashboard']
