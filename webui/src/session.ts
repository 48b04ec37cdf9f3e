// The signed-in user, shared by the shell and the pages. `undefined`: not known yet; `null`:
// signed out (the shell shows /login).

import { useEffect, useState } from "preact/hooks";
import type { User } from "./api";

let current: User | null | undefined = undefined;
const listeners = new Set<() => void>();

export function setUser(u: User | null): void {
  current = u;
  listeners.forEach((f) => f());
}

export function currentUser(): User | null | undefined {
  return current;
}

export function useUser(): User | null | undefined {
  const [, setTick] = useState(0);
  useEffect(() => {
    const f = () => setTick((t) => t + 1);
    listeners.add(f);
    return () => {
      listeners.delete(f);
    };
  }, []);
  return current;
}
