// A client-side app: the API serves 200.html for every app route.
export const ssr = false;
export const prerender = false;
export const trailingSlash = 'never';
