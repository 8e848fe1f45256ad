import type { HandleClientError } from '@sveltejs/kit';

/** An unknown address is a page of its own (+error.svelte), not an error for the console; others are logged. */
export const handleError: HandleClientError = ({ error, status, message }) => {
  if (status !== 404) console.error(error);
  return { message };
};
