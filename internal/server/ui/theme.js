// The colour theme: the system's (prefers-color-scheme) unless the user
// picks light or dark with the header's button; the choice is remembered.

const key = 'stepwise_theme';
const modes = ['auto', 'light', 'dark'];
const names = { auto: 'follows the system', light: 'light', dark: 'dark' };

function apply(button, mode) {
  if (mode === 'auto') delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = mode;
  button.textContent = `Theme: ${mode}`;
  button.title = `Colour theme: ${names[mode]}; press to change`;
}

// initTheme wires the theme button.
export function initTheme(button) {
  let mode = localStorage.getItem(key);
  if (!modes.includes(mode)) mode = 'auto';
  apply(button, mode);
  button.addEventListener('click', () => {
    mode = modes[(modes.indexOf(mode) + 1) % modes.length];
    localStorage.setItem(key, mode);
    apply(button, mode);
  });
}
