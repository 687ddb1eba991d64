/**
 * Public names of people: a display name and initials from the `users` profile, never an e-mail
 * or an id (docs/spaces.md, "Public page").
 */

export interface Profile {
  display_name: string | null
  first_name: string | null
  last_name: string | null
  username: string | null
  avatar_url: string | null
}

const clean = (s: string | null | undefined): string => (s ?? '').trim()

/** Falls back from display name to first + last name to a username that is not an e-mail, then to `fallback`. */
export function publicName (p: Profile | undefined, fallback: string): string {
  if (p === undefined) return fallback
  const display = clean(p.display_name)
  if (display !== '' && !display.includes('@')) return display
  const full = [clean(p.first_name), clean(p.last_name)].filter(s => s !== '').join(' ')
  if (full !== '' && !full.includes('@')) return full
  const user = clean(p.username)
  if (user !== '' && !user.includes('@')) return user
  return fallback
}

/** Up to two initials from the words of a name, upper-case; `?` when there is no letter. */
export function initialsOf (name: string): string {
  const letters = name
    .split(/\s+/)
    .map(w => [...w].find(c => /\p{L}|\p{N}/u.test(c)))
    .filter((c): c is string => c !== undefined)
  const picked = letters.length > 1 ? [letters[0], letters[letters.length - 1]] : letters.slice(0, 1)
  const out = picked.join('').toUpperCase()
  return out === '' ? '?' : out
}

/** Only http(s) avatars are shown. */
export const publicAvatar = (url: string | null | undefined): string | undefined =>
  url !== null && url !== undefined && /^https?:\/\//i.test(url) ? url : undefined

export function previewOf (p: Profile | undefined, fallback: string) {
  const name = publicName(p, fallback)
  const avatar = publicAvatar(p?.avatar_url)
  return { display_name: name, initials: initialsOf(name), ...(avatar !== undefined ? { avatar_url: avatar } : {}) }
}
