/**
 * The recurrence examples of RFC 5545, section 3.8.5.3, as data for tests: each rule with its DTSTART (a wall time
 * of America/New_York in the RFC) and the dates the RFC lists, all at 09:00 local. An example the RFC lists as
 * "forever" carries a COUNT of the dates it lists (its first dates are the same); the Friday-the-13th example starts
 * at its first date instead of excluding a DTSTART that is not one. The sub-daily examples (FREQ=HOURLY, MINUTELY)
 * are in `SUB_DAILY`: a series has at most one occurrence a day.
 *
 * The Gregorian calendar repeats every 400 years (146 097 days, a whole number of weeks): `shifted` moves an example
 * 400 years on, to dates a series may start at, with the same weekdays and leap years.
 */
import { DateTime } from 'luxon'

export interface RfcExample {
  name: string
  /** local date and time of DTSTART, `YYYYMMDDTHHMMSS` */
  dtstart: string
  rrule: string
  /** local dates of the occurrences, `YYYY-MM-DD`, each at the DTSTART's time */
  dates: string[]
}

const range = (ym: string, from: number, to: number): string[] =>
  Array.from({ length: to - from + 1 }, (_, i) => `${ym}-${String(from + i).padStart(2, '0')}`)
const days = (ym: string, ...ds: number[]): string[] => ds.map(d => `${ym}-${String(d).padStart(2, '0')}`)

export const RFC5545_EXAMPLES: RfcExample[] = [
  {
    name: 'Daily for 10 occurrences',
    dtstart: '19970902T090000',
    rrule: 'FREQ=DAILY;COUNT=10',
    dates: range('1997-09', 2, 11)
  },
  {
    name: 'Daily until December 24, 1997',
    dtstart: '19970902T090000',
    rrule: 'FREQ=DAILY;UNTIL=19971224T000000Z',
    dates: [...range('1997-09', 2, 30), ...range('1997-10', 1, 31), ...range('1997-11', 1, 30),
      ...range('1997-12', 1, 23)]
  },
  {
    name: 'Every other day - forever',
    dtstart: '19970902T090000',
    rrule: 'FREQ=DAILY;INTERVAL=2;COUNT=25',
    dates: [...days('1997-09', 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30),
      ...days('1997-10', 2, 4, 6, 8, 10, 12, 14, 16, 18, 20)]
  },
  {
    name: 'Every 10 days, 5 occurrences',
    dtstart: '19970902T090000',
    rrule: 'FREQ=DAILY;INTERVAL=10;COUNT=5',
    dates: [...days('1997-09', 2, 12, 22), ...days('1997-10', 2, 12)]
  },
  {
    name: 'Every day in January, for 3 years (yearly)',
    dtstart: '19980101T090000',
    rrule: 'FREQ=YEARLY;UNTIL=20000131T140000Z;BYMONTH=1;BYDAY=SU,MO,TU,WE,TH,FR,SA',
    dates: [...range('1998-01', 1, 31), ...range('1999-01', 1, 31), ...range('2000-01', 1, 31)]
  },
  {
    name: 'Every day in January, for 3 years (daily)',
    dtstart: '19980101T090000',
    rrule: 'FREQ=DAILY;UNTIL=20000131T140000Z;BYMONTH=1',
    dates: [...range('1998-01', 1, 31), ...range('1999-01', 1, 31), ...range('2000-01', 1, 31)]
  },
  {
    name: 'Weekly for 10 occurrences',
    dtstart: '19970902T090000',
    rrule: 'FREQ=WEEKLY;COUNT=10',
    dates: [...days('1997-09', 2, 9, 16, 23, 30), ...days('1997-10', 7, 14, 21, 28), ...days('1997-11', 4)]
  },
  {
    name: 'Weekly until December 24, 1997',
    dtstart: '19970902T090000',
    rrule: 'FREQ=WEEKLY;UNTIL=19971224T000000Z',
    dates: [...days('1997-09', 2, 9, 16, 23, 30), ...days('1997-10', 7, 14, 21, 28),
      ...days('1997-11', 4, 11, 18, 25), ...days('1997-12', 2, 9, 16, 23)]
  },
  {
    name: 'Every other week - forever',
    dtstart: '19970902T090000',
    rrule: 'FREQ=WEEKLY;INTERVAL=2;WKST=SU;COUNT=13',
    dates: [...days('1997-09', 2, 16, 30), ...days('1997-10', 14, 28), ...days('1997-11', 11, 25),
      ...days('1997-12', 9, 23), ...days('1998-01', 6, 20), ...days('1998-02', 3, 17)]
  },
  {
    name: 'Weekly on Tuesday and Thursday for five weeks (UNTIL)',
    dtstart: '19970902T090000',
    rrule: 'FREQ=WEEKLY;UNTIL=19971007T000000Z;WKST=SU;BYDAY=TU,TH',
    dates: [...days('1997-09', 2, 4, 9, 11, 16, 18, 23, 25, 30), ...days('1997-10', 2)]
  },
  {
    name: 'Weekly on Tuesday and Thursday for five weeks (COUNT)',
    dtstart: '19970902T090000',
    rrule: 'FREQ=WEEKLY;COUNT=10;WKST=SU;BYDAY=TU,TH',
    dates: [...days('1997-09', 2, 4, 9, 11, 16, 18, 23, 25, 30), ...days('1997-10', 2)]
  },
  {
    name: 'Every other week on Monday, Wednesday, and Friday until December 24, 1997',
    dtstart: '19970901T090000',
    rrule: 'FREQ=WEEKLY;INTERVAL=2;UNTIL=19971224T000000Z;WKST=SU;BYDAY=MO,WE,FR',
    dates: [...days('1997-09', 1, 3, 5, 15, 17, 19, 29), ...days('1997-10', 1, 3, 13, 15, 17, 27, 29, 31),
      ...days('1997-11', 10, 12, 14, 24, 26, 28), ...days('1997-12', 8, 10, 12, 22)]
  },
  {
    name: 'Every other week on Tuesday and Thursday, for 8 occurrences',
    dtstart: '19970902T090000',
    rrule: 'FREQ=WEEKLY;INTERVAL=2;COUNT=8;WKST=SU;BYDAY=TU,TH',
    dates: [...days('1997-09', 2, 4, 16, 18, 30), ...days('1997-10', 2, 14, 16)]
  },
  {
    name: 'Monthly on the first Friday for 10 occurrences',
    dtstart: '19970905T090000',
    rrule: 'FREQ=MONTHLY;COUNT=10;BYDAY=1FR',
    dates: ['1997-09-05', '1997-10-03', '1997-11-07', '1997-12-05', '1998-01-02', '1998-02-06', '1998-03-06',
      '1998-04-03', '1998-05-01', '1998-06-05']
  },
  {
    name: 'Monthly on the first Friday until December 24, 1997',
    dtstart: '19970905T090000',
    rrule: 'FREQ=MONTHLY;UNTIL=19971224T000000Z;BYDAY=1FR',
    dates: ['1997-09-05', '1997-10-03', '1997-11-07', '1997-12-05']
  },
  {
    name: 'Every other month on the first and last Sunday of the month for 10 occurrences',
    dtstart: '19970907T090000',
    rrule: 'FREQ=MONTHLY;INTERVAL=2;COUNT=10;BYDAY=1SU,-1SU',
    dates: ['1997-09-07', '1997-09-28', '1997-11-02', '1997-11-30', '1998-01-04', '1998-01-25', '1998-03-01',
      '1998-03-29', '1998-05-03', '1998-05-31']
  },
  {
    name: 'Monthly on the second-to-last Monday of the month for 6 months',
    dtstart: '19970922T090000',
    rrule: 'FREQ=MONTHLY;COUNT=6;BYDAY=-2MO',
    dates: ['1997-09-22', '1997-10-20', '1997-11-17', '1997-12-22', '1998-01-19', '1998-02-16']
  },
  {
    name: 'Monthly on the third-to-the-last day of the month, forever',
    dtstart: '19970928T090000',
    rrule: 'FREQ=MONTHLY;BYMONTHDAY=-3;COUNT=6',
    dates: ['1997-09-28', '1997-10-29', '1997-11-28', '1997-12-29', '1998-01-29', '1998-02-26']
  },
  {
    name: 'Monthly on the 2nd and 15th of the month for 10 occurrences',
    dtstart: '19970902T090000',
    rrule: 'FREQ=MONTHLY;COUNT=10;BYMONTHDAY=2,15',
    dates: [...days('1997-09', 2, 15), ...days('1997-10', 2, 15), ...days('1997-11', 2, 15),
      ...days('1997-12', 2, 15), ...days('1998-01', 2, 15)]
  },
  {
    name: 'Monthly on the first and last day of the month for 10 occurrences',
    dtstart: '19970930T090000',
    rrule: 'FREQ=MONTHLY;COUNT=10;BYMONTHDAY=1,-1',
    dates: ['1997-09-30', '1997-10-01', '1997-10-31', '1997-11-01', '1997-11-30', '1997-12-01', '1997-12-31',
      '1998-01-01', '1998-01-31', '1998-02-01']
  },
  {
    name: 'Every 18 months on the 10th thru 15th of the month for 10 occurrences',
    dtstart: '19970910T090000',
    rrule: 'FREQ=MONTHLY;INTERVAL=18;COUNT=10;BYMONTHDAY=10,11,12,13,14,15',
    dates: [...range('1997-09', 10, 15), ...range('1999-03', 10, 13)]
  },
  {
    name: 'Every Tuesday, every other month',
    dtstart: '19970902T090000',
    rrule: 'FREQ=MONTHLY;INTERVAL=2;BYDAY=TU;COUNT=18',
    dates: [...days('1997-09', 2, 9, 16, 23, 30), ...days('1997-11', 4, 11, 18, 25),
      ...days('1998-01', 6, 13, 20, 27), ...days('1998-03', 3, 10, 17, 24, 31)]
  },
  {
    name: 'Yearly in June and July for 10 occurrences',
    dtstart: '19970610T090000',
    rrule: 'FREQ=YEARLY;COUNT=10;BYMONTH=6,7',
    dates: ['1997', '1998', '1999', '2000', '2001'].flatMap(y => [`${y}-06-10`, `${y}-07-10`])
  },
  {
    name: 'Every other year on January, February, and March for 10 occurrences',
    dtstart: '19970310T090000',
    rrule: 'FREQ=YEARLY;INTERVAL=2;COUNT=10;BYMONTH=1,2,3',
    dates: ['1997-03-10', ...['1999', '2001', '2003'].flatMap(y => [`${y}-01-10`, `${y}-02-10`, `${y}-03-10`])]
  },
  {
    name: 'Every third year on the 1st, 100th, and 200th day for 10 occurrences',
    dtstart: '19970101T090000',
    rrule: 'FREQ=YEARLY;INTERVAL=3;COUNT=10;BYYEARDAY=1,100,200',
    dates: ['1997-01-01', '1997-04-10', '1997-07-19', '2000-01-01', '2000-04-09', '2000-07-18', '2003-01-01',
      '2003-04-10', '2003-07-19', '2006-01-01']
  },
  {
    name: 'Every 20th Monday of the year, forever',
    dtstart: '19970519T090000',
    rrule: 'FREQ=YEARLY;BYDAY=20MO;COUNT=3',
    dates: ['1997-05-19', '1998-05-18', '1999-05-17']
  },
  {
    name: 'Monday of week number 20 (where the default start of the week is Monday), forever',
    dtstart: '19970512T090000',
    rrule: 'FREQ=YEARLY;BYWEEKNO=20;BYDAY=MO;COUNT=3',
    dates: ['1997-05-12', '1998-05-11', '1999-05-17']
  },
  {
    name: 'Every Thursday in March, forever',
    dtstart: '19970313T090000',
    rrule: 'FREQ=YEARLY;BYMONTH=3;BYDAY=TH;COUNT=11',
    dates: [...days('1997-03', 13, 20, 27), ...days('1998-03', 5, 12, 19, 26), ...days('1999-03', 4, 11, 18, 25)]
  },
  {
    name: 'Every Thursday, but only during June, July, and August, forever',
    dtstart: '19970605T090000',
    rrule: 'FREQ=YEARLY;BYDAY=TH;BYMONTH=6,7,8;COUNT=39',
    dates: [...days('1997-06', 5, 12, 19, 26), ...days('1997-07', 3, 10, 17, 24, 31), ...days('1997-08', 7, 14, 21, 28),
      ...days('1998-06', 4, 11, 18, 25), ...days('1998-07', 2, 9, 16, 23, 30), ...days('1998-08', 6, 13, 20, 27),
      ...days('1999-06', 3, 10, 17, 24), ...days('1999-07', 1, 8, 15, 22, 29), ...days('1999-08', 5, 12, 19, 26)]
  },
  {
    name: 'Every Friday the 13th, forever (from the first)',
    dtstart: '19980213T090000',
    rrule: 'FREQ=MONTHLY;BYDAY=FR;BYMONTHDAY=13;COUNT=5',
    dates: ['1998-02-13', '1998-03-13', '1998-11-13', '1999-08-13', '2000-10-13']
  },
  {
    name: 'The first Saturday that follows the first Sunday of the month, forever',
    dtstart: '19970913T090000',
    rrule: 'FREQ=MONTHLY;BYDAY=SA;BYMONTHDAY=7,8,9,10,11,12,13;COUNT=10',
    dates: ['1997-09-13', '1997-10-11', '1997-11-08', '1997-12-13', '1998-01-10', '1998-02-07', '1998-03-07',
      '1998-04-11', '1998-05-09', '1998-06-13']
  },
  {
    name: 'Every 4 years, the first Tuesday after a Monday in November, forever (U.S. Presidential Election day)',
    dtstart: '19961105T090000',
    rrule: 'FREQ=YEARLY;INTERVAL=4;BYMONTH=11;BYDAY=TU;BYMONTHDAY=2,3,4,5,6,7,8;COUNT=3',
    dates: ['1996-11-05', '2000-11-07', '2004-11-02']
  },
  {
    name: 'The third instance into the month of one of Tuesday, Wednesday, or Thursday, for the next 3 months',
    dtstart: '19970904T090000',
    rrule: 'FREQ=MONTHLY;COUNT=3;BYDAY=TU,WE,TH;BYSETPOS=3',
    dates: ['1997-09-04', '1997-10-07', '1997-11-06']
  },
  {
    name: 'The second-to-last weekday of the month',
    dtstart: '19970929T090000',
    rrule: 'FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-2;COUNT=7',
    dates: ['1997-09-29', '1997-10-30', '1997-11-27', '1997-12-30', '1998-01-29', '1998-02-26', '1998-03-30']
  },
  {
    name: 'WKST makes a difference (WKST=MO)',
    dtstart: '19970805T090000',
    rrule: 'FREQ=WEEKLY;INTERVAL=2;COUNT=4;BYDAY=TU,SU;WKST=MO',
    dates: ['1997-08-05', '1997-08-10', '1997-08-19', '1997-08-24']
  },
  {
    name: 'WKST makes a difference (WKST=SU)',
    dtstart: '19970805T090000',
    rrule: 'FREQ=WEEKLY;INTERVAL=2;COUNT=4;BYDAY=TU,SU;WKST=SU',
    dates: ['1997-08-05', '1997-08-17', '1997-08-19', '1997-08-31']
  },
  {
    name: 'An invalid date (February 30) is ignored',
    dtstart: '20070115T090000',
    rrule: 'FREQ=MONTHLY;BYMONTHDAY=15,30;COUNT=5',
    dates: ['2007-01-15', '2007-01-30', '2007-02-15', '2007-03-15', '2007-03-30']
  }
]

/** The sub-daily examples of the section: refused (a series has at most one occurrence a day). */
export const SUB_DAILY = ['FREQ=HOURLY;INTERVAL=3;UNTIL=19970902T170000Z', 'FREQ=MINUTELY;INTERVAL=15;COUNT=6',
  'FREQ=MINUTELY;INTERVAL=90;COUNT=4', 'FREQ=DAILY;BYHOUR=9,10,11,12,13,14,15,16;BYMINUTE=0,20,40']

const plusYears = (text: string, years: number): string => text.replace(/\b(\d{4})(\d{4}T\d{6}Z?)\b/g,
  (_m, y: string, rest: string) => `${Number(y) + years}${rest}`)

/**
 * An example `years` on (400 by default): its DTSTART, UNTIL and dates. The Gregorian calendar repeats every 400
 * years; between 1901 and 2099 also every 28 (`shifted(e, 28)`: the RFC's 1996–2007 become 2024–2035, dates that
 * parsers with time-zone data up to 2037 read right).
 */
export function shifted (e: RfcExample, years = 400): RfcExample {
  return {
    ...e,
    dtstart: plusYears(e.dtstart, years),
    rrule: plusYears(e.rrule, years),
    dates: e.dates.map(d => `${Number(d.slice(0, 4)) + years}${d.slice(4)}`)
  }
}

/**
 * The rule of an example for a series in `zone`: an UNTIL in UTC is an instant of New York in the RFC; in another
 * zone the rule ends at the same wall time there, so that it has the same dates.
 */
export function ruleIn (rrule: string, zone: string): string {
  return rrule.replace(/UNTIL=(\d{8}T\d{6})Z/, (_m, utc: string) => {
    const wall = DateTime.fromFormat(utc, "yyyyMMdd'T'HHmmss", { zone: 'UTC' }).setZone('America/New_York')
    const there = DateTime.fromObject({
      year: wall.year, month: wall.month, day: wall.day, hour: wall.hour, minute: wall.minute, second: wall.second
    }, { zone })
    return `UNTIL=${there.toUTC().toFormat("yyyyMMdd'T'HHmmss")}Z`
  })
}

/** The instant of an example's DTSTART wall time in `zone`, ISO 8601. */
export const startIn = (dtstart: string, zone: string): string =>
  DateTime.fromFormat(dtstart, "yyyyMMdd'T'HHmmss", { zone }).toUTC().toISO() ?? ''
