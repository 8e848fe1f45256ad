/** The CLI's version; a unit test keeps it equal to apps/cli/package.json. */
export const CLI_VERSION = '0.1.0';
