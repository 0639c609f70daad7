// Synthetic declaration file for the kit's own tests.
export type { Thing } from "./elsewhere.js";
/** A box keeps values. It never loses one. */
export interface Box {
    /** Put a value in. Returns nothing. */
    put(value: string): void;
    /**
     * Take the value back out.
     *
     * Rules:
     *  1. an empty box answers undefined;
     *  2. taking twice answers the same value.
     */
    take(): string | undefined;
    // Count of values, best-effort.
    readonly size: number;
}
/** True when the box is empty. */
export declare function isEmpty(box: Box): boolean;
