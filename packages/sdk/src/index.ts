// Placeholder entry point; the SDK itself is being built.
export const SDK_VERSION = '0.1.0'
