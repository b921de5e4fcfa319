// Counts the passes of the event loop (a ticker re-set from setImmediate runs once per pass), for
// tests of code that must let other work run between its steps.
export function countLoopPasses(): { passes: () => number; stop: () => void } {
  let passes = 0;
  let ticking = true;
  const tick = () => {
    passes++;
    if (ticking) setImmediate(tick);
  };
  setImmediate(tick);
  return { passes: () => passes, stop: () => (ticking = false) };
}
