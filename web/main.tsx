import { render } from 'preact';
import { App } from './app.tsx';
import { installKeyboard } from './keyboard.ts';
import './style.css';

installKeyboard();
const root = document.getElementById('app')!;
root.textContent = '';
render(<App />, root);
