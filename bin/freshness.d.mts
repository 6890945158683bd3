export function newestMtime(dir: string, skip?: string[]): number;
export function isFresh(output: string, sourceDir: string, skip?: string[]): boolean;
