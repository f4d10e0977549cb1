/** A page of a streamed result and the cursor of the next page (null at the end). */
export interface Page<T, C> {
  items: T[];
  next: C | null;
}
